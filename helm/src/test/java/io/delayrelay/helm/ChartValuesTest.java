package io.delayrelay.helm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.marcnuri.helm.Helm;
import io.delayrelay.helm.Chart.Manifests;
import io.delayrelay.helm.Chart.Nodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Chart values that the docs promise: numeric image tags, extra volumes for CA files, a safe grace period, the dashboard. */
class ChartValuesTest {

    @Test
    void imageTagMayBeANumber(@TempDir Path dir) throws Exception {
        Manifests manifests =
                Chart.template(values(dir, "image:\n  repository: registry.example.com/delay-relay\n  tag: 2\n"));

        assertThat(manifests.container().get("image")).isEqualTo("registry.example.com/delay-relay:2");
    }

    @Test
    void imageComesFromARegistryAndADigestPinsIt(@TempDir Path dir) throws Exception {
        String digest = "sha256:" + "0123456789abcdef".repeat(4);

        assertThat(Chart.template(values(dir, "image:\n  registry: registry.example.com/\n  tag: 1.2.3\n"))
                        .container()
                        .get("image"))
                .isEqualTo("registry.example.com/delay-relay:1.2.3");
        assertThat(Chart.template(values(
                                dir,
                                "image:\n  registry: registry.example.com\n  tag: 1.2.3\n  digest: " + digest + "\n"))
                        .container()
                        .get("image"))
                .isEqualTo("registry.example.com/delay-relay@" + digest);
        assertThat(Chart.template(null).container().get("image")).isEqualTo("delay-relay:0.1.0");
        assertThatThrownBy(() -> Chart.templateWith("image.digest", "latest")).hasMessageContaining("/image/digest");
    }

    @Test
    void podSpecHasNoServiceLinksAndProbesTakeAnInitialDelay() {
        Manifests manifests = Chart.templateWith("probes.readiness.initialDelaySeconds", "20");
        Map<String, Object> podSpec = Nodes.map(Nodes.at(manifests.one("Deployment"), "spec", "template", "spec"));

        // a Service named redis would otherwise set REDIS_PORT=tcp://..., which the image reads as a port
        assertThat(podSpec).containsEntry("enableServiceLinks", false);
        assertThat(Nodes.map(manifests.container().get("readinessProbe"))).containsEntry("initialDelaySeconds", 20);
        assertThat(Nodes.map(manifests.container().get("livenessProbe"))).doesNotContainKey("initialDelaySeconds");
    }

    @Test
    void schemaChecksDurationsSizesAndTheWakeMode() {
        assertThatThrownBy(() -> Chart.templateWith("tmpSizeLimit", "256 MB")).hasMessageContaining("/tmpSizeLimit");
        assertThatThrownBy(() -> Chart.templateWith("metrics.prometheusRule.for", "5 minutes"))
                .hasMessageContaining("/metrics/prometheusRule/for");
        assertThatThrownBy(() -> Chart.templateWith("metrics.prometheusRule.publishFailureWindow", "5"))
                .hasMessageContaining("/metrics/prometheusRule/publishFailureWindow");
        assertThatThrownBy(() -> Chart.templateWith("metrics.serviceMonitor.interval", "30"))
                .hasMessageContaining("/metrics/serviceMonitor/interval");
        assertThatThrownBy(() -> Chart.templateWith("relay.wake.keyspace-events", "on"))
                .hasMessageContaining("/relay/wake/keyspace-events");
        assertThatThrownBy(() -> Chart.templateWith("metrics.prometheusRule.runbookBaseUrl", "wiki/relay"))
                .hasMessageContaining("/metrics/prometheusRule/runbookBaseUrl");
        assertThat(Chart.templateWith(
                                "tmpSizeLimit", "1Gi",
                                "metrics.prometheusRule.for", "1h30m",
                                "relay.wake.keyspace-events", "off")
                        .applicationYaml())
                .contains("keyspace-events: \"off\"");
    }

    @Test
    void aRedisCaFileCanBeMountedOnTheReadOnlyRootFilesystem(@TempDir Path dir) throws Exception {
        Manifests manifests = Chart.template(
                values(
                        dir,
                        """
                extraVolumes:
                  - name: redis-ca
                    secret:
                      secretName: redis-ca
                extraVolumeMounts:
                  - name: redis-ca
                    mountPath: /etc/redis-ca
                    readOnly: true
                extraEnvFrom:
                  - configMapRef:
                      name: relay-env
                """));

        Map<String, Object> container = manifests.container();
        assertThat(Nodes.list(container.get("volumeMounts")))
                .contains(Map.of("name", "redis-ca", "mountPath", "/etc/redis-ca", "readOnly", true));
        assertThat(Nodes.list(container.get("envFrom")))
                .containsExactly(Map.of("configMapRef", Map.of("name", "relay-env")));
        List<Object> volumes = Nodes.list(Nodes.at(manifests.one("Deployment"), "spec", "template", "spec", "volumes"));
        assertThat(volumes).contains(Map.of("name", "redis-ca", "secret", Map.of("secretName", "redis-ca")));
    }

    @Test
    void renderFailsWhenTheGracePeriodIsNotLongerThanTheShutdownTimeout() {
        var command = new Helm(Chart.DIR)
                .template()
                .withName(Chart.RELEASE)
                .withKubeVersion(Chart.KUBE_VERSION)
                .set("terminationGracePeriodSeconds", "60")
                .set("relay.shutdown-timeout", "1m");

        assertThatThrownBy(command::call)
                .hasMessageContaining(
                        "terminationGracePeriodSeconds (60) must be longer than relay.shutdown-timeout (60s)");
        assertThat(new Helm(Chart.DIR)
                        .template()
                        .withName(Chart.RELEASE)
                        .withKubeVersion(Chart.KUBE_VERSION)
                        .set("terminationGracePeriodSeconds", "61")
                        .set("relay.shutdown-timeout", "1m")
                        .call())
                .contains("kind: Deployment");
    }

    @Test
    @SuppressWarnings("unchecked")
    void dashboardIsOnePerReleaseWithMaxOverReplicasAndJobNamespaceVariables() {
        Manifests manifests = Chart.template(Chart.FULL_VALUES);
        Map<String, Object> configMap = manifests.ofKind("ConfigMap").stream()
                .filter(c -> Nodes.map(c.get("data")).containsKey("delay-relay.json"))
                .findFirst()
                .orElseThrow();
        Map<String, Object> dashboard =
                new Yaml().load((String) Nodes.map(configMap.get("data")).get("delay-relay.json"));

        assertThat(dashboard.get("uid")).isEqualTo("relay-delay-relay");
        List<String> variables = new ArrayList<>();
        Nodes.list(Nodes.at(dashboard, "templating", "list"))
                .forEach(v -> variables.add((String) ((Map<String, Object>) v).get("name")));
        assertThat(variables).containsExactly("datasource", "job", "namespace", "business");
        List<String> exprs = new ArrayList<>();
        List<String> types = new ArrayList<>();
        for (Object panel : Nodes.list(dashboard.get("panels"))) {
            Map<String, Object> p = (Map<String, Object>) panel;
            types.add((String) p.get("type"));
            Nodes.list(p.get("targets")).forEach(t -> exprs.add((String) ((Map<String, Object>) t).get("expr")));
        }
        assertThat(types).first().isEqualTo("table");
        assertThat(exprs)
                .allSatisfy(e -> assertThat(e).contains("job=~\"$job\"").contains("namespace=~\"$namespace\""));
        // gauges read from Redis are the same on every replica: a sum would multiply them by the replica count
        assertThat(exprs)
                .filteredOn(
                        e -> e.matches("(?s).*delay_relay_(backlog_messages|oldest_overdue_seconds|shards|paused)\\{.*")
                                && !e.startsWith("count"))
                .isNotEmpty()
                .allSatisfy(e -> assertThat(e).startsWith("max by"));
        // several namespaces selected at once: businesses of the same name in two namespaces stay apart
        for (String e : exprs) {
            Matcher grouping = Pattern.compile("by \\(([^)]*)\\)").matcher(e);
            int groupings = 0;
            while (grouping.find()) {
                groupings++;
                assertThat(grouping.group(1)).as(e).contains("namespace");
            }
            assertThat(groupings).as(e).isPositive();
        }
    }

    private static Path values(Path dir, String yaml) throws Exception {
        Path file = dir.resolve("values.yaml");
        Files.writeString(file, yaml);
        return file;
    }
}
