{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "delay-relay.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart unless the release name already contains the chart name. */}}
{{- define "delay-relay.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "delay-relay.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "delay-relay.selectorLabels" -}}
app.kubernetes.io/name: {{ include "delay-relay.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "delay-relay.labels" -}}
helm.sh/chart: {{ include "delay-relay.chart" . }}
{{ include "delay-relay.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "delay-relay.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "delay-relay.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* [registry/]repository, then @digest when set (it pins the image), else :tag (default: the appVersion). */}}
{{- define "delay-relay.image" -}}
{{- $repository := .Values.image.repository }}
{{- with .Values.image.registry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- /* toString: a tag written as a number (image.tag: 2) renders as that number */ -}}
{{- printf "%s:%s" $repository (toString (default .Chart.AppVersion .Values.image.tag)) }}
{{- end }}
{{- end }}

{{/*
Secrets never come from values: a token or password written into values would sit in the ConfigMap or the pod
spec, readable with the "view" role. The schema refuses relay.ops.token(s); this catches the ways around it.
*/}}
{{- define "delay-relay.refusePlainSecrets" -}}
{{- $relayOps := default (dict) (get (default (dict) .Values.relay) "ops") }}
{{- range $key := list "token" "tokens" }}
{{- if hasKey $relayOps $key }}
{{- fail (printf "relay.ops.%s: an operator token must not be written into values (it would sit in the ConfigMap); put it in a Secret and set ops.existingSecret / ops.tokens" $key) }}
{{- end }}
{{- end }}
{{- $extraRelay := default (dict) (get .Values.extraConfig "relay") }}
{{- $extraOps := default (dict) (get $extraRelay "ops") }}
{{- range $key := list "token" "tokens" }}
{{- if hasKey $extraOps $key }}
{{- fail (printf "extraConfig.relay.ops.%s: an operator token must not be written into values (it would sit in the ConfigMap); put it in a Secret and set ops.existingSecret / ops.tokens" $key) }}
{{- end }}
{{- end }}
{{- if regexMatch "(?im)^\\s*[a-z0-9_.-]*password\\s*:" (toYaml .Values.extraConfig) }}
{{- fail "extraConfig holds a password: it would sit in the ConfigMap. Put it in a Secret (redis.existingSecret, rabbitmq.existingSecret, nacos.existingSecret, or extraEnv with valueFrom.secretKeyRef)" }}
{{- end }}
{{- range .Values.extraEnv }}
{{- $name := upper (toString .name) }}
{{- if and (hasKey . "value") (or (hasPrefix "RELAY_OPS_TOKEN" $name) (contains "PASSWORD" $name)) }}
{{- fail (printf "extraEnv %s has a plain value: take it from a Secret (valueFrom.secretKeyRef), e.g. ops.existingSecret / ops.tokens for operator tokens" .name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* PromQL label matchers of this release's series (without braces). */}}
{{- define "delay-relay.promSelector" -}}
{{- default (printf "job=%q, namespace=%q" (include "delay-relay.fullname" .) .Release.Namespace) .Values.metrics.prometheusRule.selector }}
{{- end }}

{{/*
The relay's application.yaml. Connection settings and the relay block come from values; passwords never:
they reach the container as environment variables from secretKeyRef (see deployment.yaml).
*/}}
{{- define "delay-relay.applicationConfig" -}}
{{- $redis := dict "host" .Values.redis.host "port" .Values.redis.port "database" .Values.redis.database "ssl" (dict "enabled" .Values.redis.ssl) }}
{{- if .Values.redis.username }}
{{- $_ := set $redis "username" .Values.redis.username }}
{{- end }}
{{- $rabbit := dict "virtual-host" .Values.rabbitmq.virtualHost "ssl" (dict "enabled" .Values.rabbitmq.ssl) }}
{{- if .Values.rabbitmq.addresses }}
{{- /* A cluster: every node, tried in order; host and port would be ignored by Spring Boot anyway. */}}
{{- $_ := set $rabbit "addresses" .Values.rabbitmq.addresses }}
{{- else }}
{{- $_ := set $rabbit "host" .Values.rabbitmq.host }}
{{- $_ := set $rabbit "port" .Values.rabbitmq.port }}
{{- end }}
{{- $spring := dict "application" (dict "name" "delay-relay") "data" (dict "redis" $redis) "rabbitmq" $rabbit }}
{{- $config := dict }}
{{- $relay := deepCopy .Values.relay }}
{{- if .Values.nacos.enabled }}
{{- $nacosConfig := dict "server-addr" .Values.nacos.serverAddr "group" .Values.nacos.group "file-extension" "yaml" }}
{{- if .Values.nacos.namespace }}
{{- $_ := set $nacosConfig "namespace" .Values.nacos.namespace }}
{{- end }}
{{- $_ := set $spring "cloud" (dict "nacos" (dict "server-addr" .Values.nacos.serverAddr "config" $nacosConfig)) }}
{{- $_ := set $spring "config" (dict "import" (printf "optional:nacos:%s?group=%s&refreshEnabled=true" .Values.nacos.dataId .Values.nacos.group)) }}
{{- $_ := set $config "logging" (dict "level" (dict "com.alibaba.nacos.common.remote.client" "off")) }}
{{- $_ := set $relay "nacos" (mustMergeOverwrite (dict "optional" .Values.nacos.optional) (default (dict) (get $relay "nacos"))) }}
{{- else }}
{{- /* Inert without the Nacos starter; with it, keeps the relay from requiring a Nacos import. */}}
{{- $_ := set $spring "cloud" (dict "nacos" (dict "config" (dict "enabled" false "import-check" (dict "enabled" false)))) }}
{{- end }}
{{- $management := dict
      "server" (dict "port" .Values.ports.management)
      "endpoints" (dict "web" (dict "exposure" (dict "include" "health,info,prometheus,relay")))
      "endpoint" (dict "health" (dict "probes" (dict "enabled" true))) }}
{{- $_ := set $config "spring" $spring }}
{{- $_ := set $config "server" (dict "port" .Values.ports.http "shutdown" "graceful") }}
{{- $_ := set $config "management" $management }}
{{- $_ := set $config "relay" $relay }}
{{- $config = mustMergeOverwrite $config (deepCopy .Values.extraConfig) }}
{{- toYaml $config }}
{{- end }}

{{/*
A Spring Boot duration ("30s", "2m", "500ms", "1h", "1d", or bare milliseconds) in whole seconds, rounded up.
*/}}
{{- define "delay-relay.durationSeconds" -}}
{{- $v := toString . | trim -}}
{{- if hasSuffix "ms" $v -}}{{ div (add (atoi (trimSuffix "ms" $v)) 999) 1000 }}
{{- else if hasSuffix "s" $v -}}{{ atoi (trimSuffix "s" $v) }}
{{- else if hasSuffix "m" $v -}}{{ mul (atoi (trimSuffix "m" $v)) 60 }}
{{- else if hasSuffix "h" $v -}}{{ mul (atoi (trimSuffix "h" $v)) 3600 }}
{{- else if hasSuffix "d" $v -}}{{ mul (atoi (trimSuffix "d" $v)) 86400 }}
{{- else -}}{{ div (add (atoi $v) 999) 1000 }}
{{- end -}}
{{- end }}

{{/* The Grafana dashboard's uid: metrics.grafanaDashboard.uid, or the release's full name (Grafana allows 40 characters). */}}
{{- define "delay-relay.dashboardUid" -}}
{{- default (include "delay-relay.fullname" . | trunc 40 | trimSuffix "-") .Values.metrics.grafanaDashboard.uid }}
{{- end }}

{{/*
An alert's runbook annotations from (list runbookBaseUrl anchor): always `runbook`, the section of the chart's
README.md (shipped with the chart: helm show readme); runbook_url only when a base URL is set, so no alert links to
a page that does not exist.
*/}}
{{- define "delay-relay.runbook" -}}
{{- $base := index . 0 }}
{{- $anchor := index . 1 -}}
runbook: "delay-relay chart README.md#{{ $anchor }}"
{{- if $base }}
runbook_url: "{{ trimSuffix "#" $base }}#{{ $anchor }}"
{{- end }}
{{- end }}
