package io.delayrelay.helm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.marcnuri.helm.Helm;
import io.delayrelay.helm.Chart.Manifests;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.yaml.snakeyaml.Yaml;

import static io.delayrelay.helm.Chart.Nodes.at;
import static io.delayrelay.helm.Chart.Nodes.list;
import static io.delayrelay.helm.Chart.Nodes.map;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RenderedManifestsTest {

    static final Manifests DEFAULTS = Chart.template(null);
    static final Manifests FULL = Chart.template(Chart.FULL_VALUES);

    static Stream<Arguments> bothValueSets() {
        return Stream.of(Arguments.of("defaults", DEFAULTS), Arguments.of("ci/full-values.yaml", FULL));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("bothValueSets")
    void probesAskTheActuatorHealthGroupsOnTheManagementPort(String values, Manifests manifests) {
        Map<String, Object> container = manifests.container();

        assertThat(at(container, "livenessProbe", "httpGet", "path")).isEqualTo("/actuator/health/liveness");
        assertThat(at(container, "readinessProbe", "httpGet", "path")).isEqualTo("/actuator/health/readiness");
        assertThat(at(container, "startupProbe", "httpGet", "path")).isEqualTo("/actuator/health/liveness");
        for (String probe : List.of("livenessProbe", "readinessProbe", "startupProbe")) {
            assertThat(at(container, probe, "httpGet", "port")).as(probe).isEqualTo("http-management");
        }
        assertThat(list(container.get("ports")))
                .contains(Map.of("name", "http-management", "containerPort", 8081, "protocol", "TCP"));
        Map<String, Object> service = manifests.one("Service");
        assertThat(list(at(service, "spec", "ports"))).singleElement().satisfies(port -> {
            assertThat(map(port)).containsEntry("name", "http-management").containsEntry("port", 8081);
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("bothValueSets")
    void containerRunsAsNonRootOnAReadOnlyRootFilesystemWithAWritableTmp(String values, Manifests manifests) {
        Map<String, Object> container = manifests.container();
        Map<String, Object> podSpec = map(at(manifests.one("Deployment"), "spec", "template", "spec"));

        assertThat(at(container, "securityContext", "runAsNonRoot")).isEqualTo(true);
        assertThat(at(container, "securityContext", "readOnlyRootFilesystem")).isEqualTo(true);
        assertThat(at(container, "securityContext", "allowPrivilegeEscalation")).isEqualTo(false);
        assertThat((Integer) at(container, "securityContext", "runAsUser")).isPositive();
        assertThat(at(podSpec, "securityContext", "runAsNonRoot")).isEqualTo(true);
        assertThat(list(container.get("volumeMounts"))).contains(Map.of("name", "tmp", "mountPath", "/tmp"));
        assertThat(list(podSpec.get("volumes"))).anySatisfy(volume -> {
            assertThat(map(volume)).containsEntry("name", "tmp").containsKey("emptyDir");
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("bothValueSets")
    void noConfigMapHoldsAPassword(String values, Manifests manifests) {
        for (Map<String, Object> configMap : manifests.ofKind("ConfigMap")) {
            for (Object content : map(configMap.get("data")).values()) {
                assertThat(content.toString().toLowerCase())
                        .doesNotContain("password")
                        .doesNotContain("secret");
            }
        }
        assertThat(manifests.ofKind("Secret")).isEmpty();
    }

    @Test
    void credentialsComeFromTheNamedSecretsOnly() {
        Map<String, Object> container = FULL.container();

        assertThat(secretRef(container, "SPRING_DATA_REDIS_PASSWORD")).isEqualTo("delay-relay-redis/password");
        assertThat(secretRef(container, "SPRING_RABBITMQ_USERNAME")).isEqualTo("delay-relay-rabbitmq/username");
        assertThat(secretRef(container, "SPRING_RABBITMQ_PASSWORD")).isEqualTo("delay-relay-rabbitmq/password");
        assertThat(secretRef(container, "SPRING_CLOUD_NACOS_USERNAME")).isEqualTo("delay-relay-nacos/username");
        assertThat(secretRef(container, "SPRING_CLOUD_NACOS_PASSWORD")).isEqualTo("delay-relay-nacos/password");
        assertThat(secretRef(container, "RELAY_OPS_TOKEN")).isEqualTo("delay-relay-ops/ops-token");
        for (Object env : list(container.get("env"))) {
            if (map(env).get("name").toString().contains("PASSWORD")) {
                assertThat(map(env)).as("%s", env).doesNotContainKey("value");
            }
        }
        assertThat(list(DEFAULTS.container().get("env")))
                .noneSatisfy(env -> assertThat(map(env).get("name").toString()).contains("PASSWORD"));
    }

    @Test
    void configMapCarriesTheBusinessesConnectionsAndManagementSettingsFromValues() {
        Map<String, Object> config = new Yaml().load(FULL.applicationYaml());

        assertThat(map(at(config, "relay", "businesses")).keySet()).containsExactly("order-timeout", "review-default");
        assertThat(at(config, "relay", "businesses", "order-timeout", "exchange"))
                .isEqualTo("order.events");
        assertThat(at(config, "relay", "defaults", "batch-size")).isEqualTo(200);
        assertThat(at(config, "spring", "data", "redis", "host")).isEqualTo("redis-master.data.svc");
        assertThat(at(config, "spring", "data", "redis", "ssl", "enabled")).isEqualTo(true);
        assertThat(at(config, "spring", "rabbitmq", "ssl", "enabled")).isEqualTo(true);
        assertThat(at(config, "spring", "rabbitmq", "virtual-host")).isEqualTo("/orders");
        assertThat(at(config, "spring", "config", "import").toString()).startsWith("optional:nacos:delay-relay.yaml");
        assertThat(at(config, "management", "server", "port")).isEqualTo(8081);
        assertThat(at(config, "management", "endpoints", "web", "exposure", "include"))
                .isEqualTo("health,info,prometheus,relay");
        assertThat(at(config, "logging", "level", "io.delayrelay")).isEqualTo("INFO");
        Map<String, Object> defaults = new Yaml().load(DEFAULTS.applicationYaml());
        assertThat(at(defaults, "spring", "data", "redis", "ssl", "enabled")).isEqualTo(false);
    }

    @Test
    void rabbitmqAddressesReplaceHostAndPortForACluster(@TempDir Path work) throws IOException {
        Path values = Files.writeString(
                work.resolve("cluster-values.yaml"),
                """
                rabbitmq:
                  addresses: rabbit-0:5672,rabbit-1:5672,rabbit-2:5672
                """);

        Map<String, Object> rabbit =
                map(at(new Yaml().load(Chart.template(values).applicationYaml()), "spring", "rabbitmq"));

        assertThat(rabbit)
                .containsEntry("addresses", "rabbit-0:5672,rabbit-1:5672,rabbit-2:5672")
                .doesNotContainKeys("host", "port");
        Map<String, Object> single = map(at(new Yaml().load(DEFAULTS.applicationYaml()), "spring", "rabbitmq"));
        assertThat(single)
                .containsEntry("host", "rabbitmq")
                .containsEntry("port", 5672)
                .doesNotContainKey("addresses");
    }

    @Test
    void replicasSpreadOverNodesAndSurviveVoluntaryDisruptions() {
        Map<String, Object> podSpec = map(at(DEFAULTS.one("Deployment"), "spec", "template", "spec"));
        Map<String, Object> term =
                map(list(at(podSpec, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"))
                        .get(0));

        assertThat(at(term, "podAffinityTerm", "topologyKey")).isEqualTo("kubernetes.io/hostname");
        assertThat(at(DEFAULTS.one("Deployment"), "spec", "replicas")).isEqualTo(2);
        // a new pod that never turns Ready (bad Secret, misspelt key) halts the rollout before an old pod goes
        assertThat(at(DEFAULTS.one("Deployment"), "spec", "strategy"))
                .isEqualTo(
                        Map.of("type", "RollingUpdate", "rollingUpdate", Map.of("maxSurge", 1, "maxUnavailable", 0)));
        assertThat(at(DEFAULTS.one("PodDisruptionBudget"), "spec", "maxUnavailable"))
                .isEqualTo(1);
        assertThat(at(FULL.one("PodDisruptionBudget"), "spec", "minAvailable")).isEqualTo(2);
        assertThat(map(at(FULL.one("Deployment"), "spec")))
                .as("HPA owns replicas")
                .doesNotContainKey("replicas");
    }

    @Test
    void optionalMonitoringPartsRenderOnlyWhenEnabled() {
        for (String kind : List.of("ServiceMonitor", "PrometheusRule", "HorizontalPodAutoscaler")) {
            assertThat(DEFAULTS.ofKind(kind)).as(kind).isEmpty();
            assertThat(FULL.ofKind(kind)).as(kind).hasSize(1);
        }
        assertThat(at(FULL.one("ServiceMonitor"), "spec", "endpoints").toString())
                .contains("port=http-management")
                .contains("path=/actuator/prometheus");

        List<String> expressions = new ArrayList<>();
        for (Object group : list(at(FULL.one("PrometheusRule"), "spec", "groups"))) {
            for (Object rule : list(map(group).get("rules"))) {
                expressions.add(map(rule).get("expr").toString());
            }
        }
        assertThat(String.join("\n", expressions))
                .contains("up{job=\"relay-delay-relay\", namespace=\"delayed\"}")
                .contains("delay_relay_oldest_overdue_seconds")
                .contains("> 30")
                .contains("delay_relay_dead_lettered_total")
                .contains("delay_relay_publish_failures_total");

        Map<String, Object> dashboard = FULL.ofKind("ConfigMap").stream()
                .filter(c -> map(at(c, "metadata", "labels")).containsKey("grafana_dashboard"))
                .findFirst()
                .orElseThrow();
        assertThat(at(dashboard, "metadata", "labels", "grafana_dashboard")).isEqualTo("1");
        Map<String, Object> json = new Yaml().load((String) at(dashboard, "data", "delay-relay.json"));
        assertThat(list(json.get("panels")).toString())
                .contains("delay_relay_lag_seconds_bucket")
                .contains("delay_relay_relayed_total")
                .contains("delay_relay_backlog_messages");
    }

    @Test
    void schemaRejectsAnUnknownExchangeType() {
        var command = new Helm(Chart.DIR)
                .template()
                .withName(Chart.RELEASE)
                .withKubeVersion(Chart.KUBE_VERSION)
                .set("relay.businesses.orders.exchange", "x")
                .set("relay.businesses.orders.routing-key", "y")
                .set("relay.businesses.orders.exchange-type", "bogus");

        assertThatThrownBy(command::call).hasMessageContaining("exchange-type");
    }

    private static String secretRef(Map<String, Object> container, String name) {
        for (Object env : list(container.get("env"))) {
            if (name.equals(map(env).get("name"))) {
                Map<String, Object> ref = map(at(map(env), "valueFrom", "secretKeyRef"));
                return ref.get("name") + "/" + ref.get("key");
            }
        }
        throw new AssertionError("no env " + name);
    }
}
