package io.delayrelay.helm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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
    }

    private static Path values(Path dir, String yaml) throws Exception {
        Path file = dir.resolve("values.yaml");
        Files.writeString(file, yaml);
        return file;
    }
}
