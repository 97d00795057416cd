package io.delayrelay.helm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.helm.Chart.Manifests;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

import static io.delayrelay.helm.Chart.Nodes.at;
import static io.delayrelay.helm.Chart.Nodes.list;
import static io.delayrelay.helm.Chart.Nodes.map;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the chart does to keep message bodies and operator tokens private (review S3, S4): tokens only from Secrets,
 * named operators each from their own Secret, a NetworkPolicy on by default around the management port, and
 * NOTES.txt warnings for what publishes that port or leaves the alerts' runbook links pointing nowhere.
 */
class ChartSecurityTest {

    @TempDir
    Path dir;

    @Test
    void schemaRefusesAPlainOpsTokenNamingIt() {
        assertThatThrownBy(() -> Chart.templateWith("relay.ops.token", "s3cret-token-of-32-characters-xx"))
                .hasMessageContaining("at '/relay/ops/token'")
                .hasMessageContaining("put the token in a Secret named by ops.existingSecret or ops.tokens");
        assertThatThrownBy(() -> Chart.templateWith("relay.ops.tokens.alice", "s3cret"))
                .hasMessageContaining("at '/relay/ops/tokens'")
                .hasMessageContaining("ops.existingSecret or ops.tokens");
    }

    @Test
    void theWaysAroundTheSchemaFailTheRenderToo() throws Exception {
        // the one value the schema's const lets through still stops the render
        assertThatThrownBy(() -> Chart.templateWith(
                        "relay.ops.token",
                        "never in values: put the token in a Secret named by ops.existingSecret or ops.tokens"))
                .hasMessageContaining("relay.ops.token: an operator token must not be written into values");
        assertThatThrownBy(() -> Chart.templateWith("extraConfig.relay.ops.token", "s3cret"))
                .hasMessageContaining("extraConfig.relay.ops.token: an operator token must not be written");
        assertThatThrownBy(() -> Chart.templateWith("extraConfig.spring.rabbitmq.password", "guest"))
                .hasMessageContaining("extraConfig holds a password");
        assertThatThrownBy(() ->
                        Chart.template(values("extraEnv:\n  - name: RELAY_OPS_TOKENS_ALICE\n    value: s3cret\n")))
                .hasMessageContaining("extraEnv RELAY_OPS_TOKENS_ALICE has a plain value");
        // from a Secret it is fine
        Manifests fromSecret = Chart.template(
                values(
                        """
                extraEnv:
                  - name: RELAY_OPS_TOKENS_CAROL
                    valueFrom: {secretKeyRef: {name: relay-ops-carol, key: token}}
                """));
        assertThat(envNames(fromSecret)).contains("RELAY_OPS_TOKENS_CAROL");
    }

    @Test
    void namedOperatorTokensComeEachFromItsSecretAndBindToTheRelaysTokenMap() throws Exception {
        Manifests manifests = Chart.template(
                values(
                        """
                ops:
                  existingSecret: relay-ops
                  tokens:
                    alice: {existingSecret: relay-ops-alice, key: token}
                    bob: {existingSecret: relay-ops-bob}
                """));

        Map<String, String> refs = secretRefs(manifests);
        assertThat(refs)
                .containsEntry("RELAY_OPS_TOKEN", "relay-ops/ops-token")
                .containsEntry("RELAY_OPS_TOKENS_ALICE", "relay-ops-alice/token")
                .containsEntry("RELAY_OPS_TOKENS_BOB", "relay-ops-bob/ops-token");
        for (Object env : list(manifests.container().get("env"))) {
            if (map(env).get("name").toString().startsWith("RELAY_OPS_TOKEN")) {
                assertThat(map(env)).as("%s", env).doesNotContainKey("value");
            }
        }
        assertThat(manifests.applicationYaml()).doesNotContain("token");

        // the names the chart renders are what Spring Boot binds to relay.ops.tokens.<name>
        Map<String, Object> environment = new LinkedHashMap<>();
        refs.keySet().forEach(name -> environment.put(name, "token-of-" + name));
        StandardEnvironment spring = new StandardEnvironment();
        spring.getPropertySources()
                .addFirst(new SystemEnvironmentPropertySource("chart-systemEnvironment", environment));
        ConfigurationPropertySources.attach(spring);
        Map<String, String> tokens = Binder.get(spring)
                .bind("relay.ops.tokens", Bindable.mapOf(String.class, String.class))
                .get();
        assertThat(tokens)
                .containsOnly(
                        Map.entry("alice", "token-of-RELAY_OPS_TOKENS_ALICE"),
                        Map.entry("bob", "token-of-RELAY_OPS_TOKENS_BOB"));
    }

    @Test
    void operatorNamesAreLowerCaseLettersAndDigitsAndNeedASecret() {
        assertThatThrownBy(() -> Chart.templateWith("ops.tokens.Alice.existingSecret", "relay-ops-alice"))
                .hasMessageContaining("'Alice' does not match pattern");
        assertThatThrownBy(() -> Chart.templateWith("ops.tokens.alice-smith.existingSecret", "relay-ops-alice"))
                .hasMessageContaining("'alice-smith' does not match pattern");
        assertThatThrownBy(() -> Chart.templateWith("ops.tokens.alice.key", "token"))
                .hasMessageContaining("existingSecret");
    }

    @Test
    void networkPolicyIsOnByDefaultAndAdmitsOnlyTheNamespaceAndMonitoringToTheManagementPort() {
        Manifests manifests = Chart.template(null);
        Map<String, Object> policy = manifests.one("NetworkPolicy");

        assertThat(at(policy, "spec", "podSelector", "matchLabels"))
                .isEqualTo(at(manifests.one("Deployment"), "spec", "selector", "matchLabels"));
        assertThat(list(at(policy, "spec", "policyTypes"))).containsExactly("Ingress");
        assertThat(map(policy.get("spec"))).doesNotContainKey("egress");
        List<Object> ingress = list(at(policy, "spec", "ingress"));
        assertThat(ingress).hasSize(1);
        assertThat(list(map(ingress.get(0)).get("ports")))
                .containsExactly(Map.of("port", "http-management", "protocol", "TCP"));
        assertThat(list(map(ingress.get(0)).get("from")))
                .containsExactly(
                        Map.of("podSelector", Map.of()),
                        Map.of(
                                "namespaceSelector",
                                Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "monitoring"))));
        // the port the policy names is the container's management port
        assertThat(list(manifests.container().get("ports")))
                .anySatisfy(port -> assertThat(map(port)).containsEntry("name", "http-management"));
    }

    @Test
    void networkPolicyTakesAnotherMonitoringNamespaceExtraPeersAndOptionalEgressRules() throws Exception {
        Map<String, Object> policy = Chart.template(
                        values(
                                """
                networkPolicy:
                  monitoringNamespace: observability
                  extraIngressFrom:
                    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}
                  egress:
                    - ports: [{port: 53, protocol: UDP}]
                    - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: data}}}]
                """))
                .one("NetworkPolicy");

        assertThat(list(at(policy, "spec", "policyTypes"))).containsExactly("Ingress", "Egress");
        assertThat(list(at(policy, "spec", "egress"))).hasSize(2);
        assertThat(list(map(list(at(policy, "spec", "ingress")).get(0)).get("from")))
                .containsExactly(
                        Map.of("podSelector", Map.of()),
                        Map.of(
                                "namespaceSelector",
                                Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "observability"))),
                        Map.of(
                                "namespaceSelector",
                                Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "ingress-nginx"))));

        assertThat(Chart.templateWith("networkPolicy.enabled", "false").ofKind("NetworkPolicy"))
                .isEmpty();
        Map<String, Object> sameNamespaceOnly =
                Chart.templateWith("networkPolicy.monitoringNamespace", "").one("NetworkPolicy");
        assertThat(list(map(list(at(sameNamespaceOnly, "spec", "ingress")).get(0))
                        .get("from")))
                .containsExactly(Map.of("podSelector", Map.of()));
    }

    @Test
    void notesWarnWhenTheManagementPortIsPublishedOrRunbookLinksArePlaceholders() throws Exception {
        String defaults = Chart.notes(null);
        assertThat(defaults)
                .doesNotContain("WARNING")
                .contains("Operators: no token: the console and the relay endpoint are read-only");

        String loadBalancer = Chart.notes(values("service: {type: LoadBalancer}\n"));
        assertThat(loadBalancer)
                .contains("WARNING: service.type is LoadBalancer: the management port 8081 (operator console,")
                .contains("possibly to the internet");
        assertThat(Chart.notes(values("service: {type: NodePort}\n")))
                .contains("WARNING: service.type is NodePort")
                .doesNotContain("possibly to the internet");
        assertThat(Chart.notes(values("networkPolicy: {enabled: false}\n")))
                .contains("WARNING: networkPolicy.enabled is false");

        String placeholder = Chart.notes(
                values(
                        """
                metrics:
                  prometheusRule:
                    enabled: true
                    runbookBaseUrl: https://github.com/your-org/delay-relay/blob/main/helm/delay-relay/README.md
                """));
        assertThat(placeholder)
                .contains("WARNING: metrics.prometheusRule.runbookBaseUrl"
                        + " (https://github.com/your-org/delay-relay/blob/main/helm/delay-relay/README.md)"
                        + " is a placeholder");
        assertThat(Chart.notes(values("metrics: {prometheusRule: {enabled: true}}\n")))
                .doesNotContain("WARNING")
                .contains("Alerts carry a `runbook` annotation naming their section of this chart's README");
        assertThat(Chart.notes(values(
                        "metrics: {prometheusRule: {enabled: true, runbookBaseUrl: 'https://wiki.acme.io/relay'}}\n")))
                .doesNotContain("WARNING")
                .doesNotContain("Alerts carry a `runbook` annotation");
    }

    private Path values(String yaml) throws Exception {
        return Files.writeString(dir.resolve("values-" + System.nanoTime() + ".yaml"), yaml);
    }

    private static List<String> envNames(Manifests manifests) {
        return list(manifests.container().get("env")).stream()
                .map(env -> map(env).get("name").toString())
                .toList();
    }

    private static Map<String, String> secretRefs(Manifests manifests) {
        Map<String, String> refs = new LinkedHashMap<>();
        for (Object env : list(manifests.container().get("env"))) {
            Map<String, Object> variable = map(env);
            if (variable.get("valueFrom") instanceof Map<?, ?> from && from.get("secretKeyRef") != null) {
                Map<String, Object> ref = map(from.get("secretKeyRef"));
                refs.put(variable.get("name").toString(), ref.get("name") + "/" + ref.get("key"));
            }
        }
        return refs;
    }
}
