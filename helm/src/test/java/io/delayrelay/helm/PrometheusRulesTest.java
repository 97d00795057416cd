package io.delayrelay.helm;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.delayrelay.helm.Chart.Manifests;
import io.delayrelay.helm.Chart.Nodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The chart's alert rules as Prometheus runs them: the rendered PrometheusRule passes {@code promtool check rules},
 * and {@code promtool test rules} (src/test/resources/promtool/alerts-test.yaml) shows each alert firing on the
 * series that should fire it and staying quiet on the others.
 */
class PrometheusRulesTest {

    static final String INSTALL_HINT =
            "promtool is not installed. Install Debian's prometheus package: apt-get install -y"
                    + " --no-install-recommends prometheus (scripts/test.sh does this as root)";
    private static final Path TESTS = Chart.MODULE.resolve("src/test/resources/promtool/alerts-test.yaml");
    private static final Path WORK = Chart.MODULE.resolve("target/promtool");

    @Test
    void renderedRulesPassPromtoolCheckAndEveryAlertHasUnitTests() throws Exception {
        Files.createDirectories(WORK);
        Path rules = WORK.resolve("rules.yaml");
        List<String> alerts = writeRules(Chart.template(Chart.FULL_VALUES), rules);
        Files.copy(TESTS, WORK.resolve("alerts-test.yaml"), StandardCopyOption.REPLACE_EXISTING);

        Result check = promtool("check", "rules", rules.toString());
        assertThat(check.exitCode())
                .as("promtool check rules:%n%s", check.output())
                .isZero();
        Result test = promtool("test", "rules", WORK.resolve("alerts-test.yaml").toString());
        assertThat(test.exitCode())
                .as("promtool test rules:%n%s", test.output())
                .isZero();
        assertThat(test.output()).contains("SUCCESS");

        String tests = Files.readString(TESTS, StandardCharsets.UTF_8);
        assertThat(alerts).hasSize(18).allSatisfy(alert -> assertThat(tests)
                .as("a unit test of %s", alert)
                .contains("alertname: " + alert));
    }

    @Test
    void allDownAlertLooksForAbsentSeriesOnlyWhenTheChartsServiceMonitorScrapes(@TempDir Path dir) throws Exception {
        Path values = dir.resolve("values.yaml");
        Files.writeString(values, "metrics:\n  prometheusRule:\n    enabled: true\n");
        Map<String, Map<String, Object>> withoutMonitor = rules(Chart.template(values));
        Files.writeString(
                values, "metrics:\n  prometheusRule:\n    enabled: true\n  serviceMonitor:\n    enabled: true\n");
        Map<String, Map<String, Object>> withMonitor = rules(Chart.template(values));

        String up = "up{job=\"relay-delay-relay\", namespace=\"delayed\"}";
        // without this chart's ServiceMonitor nothing may scrape the job: absent() would always fire
        assertThat(withoutMonitor.get("DelayRelayAllDown").get("expr"))
                .isEqualTo("sum by (job, namespace) (" + up + ") == 0");
        assertThat(withMonitor.get("DelayRelayAllDown").get("expr"))
                .isEqualTo("(sum by (job, namespace) (" + up + ") == 0) or absent(" + up + ")");
        for (Map<String, Map<String, Object>> rules : List.of(withoutMonitor, withMonitor)) {
            assertThat(Nodes.at(rules.get("DelayRelayDown"), "labels", "severity"))
                    .isEqualTo("warning");
            assertThat(Nodes.at(rules.get("DelayRelayAllDown"), "labels", "severity"))
                    .isEqualTo("critical");
        }
    }

    @Test
    void withoutARunbookBaseUrlEveryAlertNamesItsReadmeSectionAndLinksNowhere(@TempDir Path dir) throws Exception {
        Path values = Files.writeString(dir.resolve("values.yaml"), "metrics:\n  prometheusRule:\n    enabled: true\n");
        Map<String, Map<String, Object>> rules = rules(Chart.template(values));
        String readme = Files.readString(Chart.DIR.resolve("README.md"), StandardCharsets.UTF_8);

        assertThat(rules).hasSize(18);
        rules.forEach((alert, rule) -> {
            Map<String, Object> annotations = Nodes.map(rule.get("annotations"));
            assertThat(annotations)
                    .as(alert)
                    .containsEntry("runbook", "delay-relay chart README.md#" + alert.toLowerCase(Locale.ROOT))
                    .doesNotContainKey("runbook_url");
            // the anchor is a heading of the chart README's Runbooks section
            assertThat(readme).as("runbook section of %s", alert).contains("\n#### " + alert + "\n");
        });
    }

    @Test
    void staleSampleThresholdIsThreeSampleIntervalsOfTheRelaysSetting(@TempDir Path dir) throws Exception {
        Path values = Files.writeString(
                dir.resolve("values.yaml"),
                "metrics:\n  prometheusRule:\n    enabled: true\nrelay:\n  metrics:\n    sample-interval: 1m\n");

        assertThat(rules(Chart.template(values))
                        .get("DelayRelayBacklogSampleStale")
                        .get("expr"))
                .asString()
                .endsWith(
                        "delay_relay_backlog_sample_age_seconds{job=\"relay-delay-relay\", namespace=\"delayed\"}) > 180");
        assertThat(rules(Chart.template(Chart.FULL_VALUES))
                        .get("DelayRelayBacklogSampleStale")
                        .get("expr"))
                .asString()
                .endsWith(") > 45");
    }

    /** The PrometheusRule's alerting rules by alert name. */
    @SuppressWarnings("unchecked")
    private static Map<String, Map<String, Object>> rules(Manifests manifests) {
        Map<String, Map<String, Object>> rules = new LinkedHashMap<>();
        for (Object group : Nodes.list(Nodes.at(manifests.one("PrometheusRule"), "spec", "groups"))) {
            for (Object rule : Nodes.list(((Map<String, Object>) group).get("rules"))) {
                Map<String, Object> r = (Map<String, Object>) rule;
                if (r.get("alert") != null) { // recording rules have no alert name
                    rules.put((String) r.get("alert"), r);
                }
            }
        }
        return rules;
    }

    /** Writes the PrometheusRule's groups as a Prometheus rule file; returns the alert names. */
    @SuppressWarnings("unchecked")
    private static List<String> writeRules(Manifests manifests, Path file) throws IOException {
        Map<String, Object> spec = Nodes.map(Nodes.at(manifests.one("PrometheusRule"), "spec"));
        Files.writeString(file, new Yaml().dump(spec), StandardCharsets.UTF_8);
        List<String> alerts = new ArrayList<>();
        for (Object group : Nodes.list(spec.get("groups"))) {
            for (Object rule : Nodes.list(((Map<String, Object>) group).get("rules"))) {
                Object alert = ((Map<String, Object>) rule).get("alert");
                if (alert != null) { // recording rules have no alert name
                    alerts.add((String) alert);
                }
            }
        }
        return alerts;
    }

    private static Result promtool(String... args) throws IOException, InterruptedException {
        Path binary = findOnPath("promtool");
        if (binary == null) {
            fail(INSTALL_HINT);
        }
        List<String> command = new ArrayList<>(List.of(binary.toString()));
        command.addAll(List.of(args));
        Path output = Files.createTempFile("promtool", ".out");
        try {
            Process process = new ProcessBuilder(command)
                    .directory(WORK.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(output.toFile())
                    .start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail("promtool " + String.join(" ", args) + " did not finish within 120 s");
            }
            return new Result(process.exitValue(), Files.readString(output, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(output);
        }
    }

    private static Path findOnPath(String name) {
        String path = System.getenv("PATH");
        for (String dir : path == null ? new String[0] : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir, name);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    private record Result(int exitCode, String output) {}
}
