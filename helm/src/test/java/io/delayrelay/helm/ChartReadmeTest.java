package io.delayrelay.helm;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import static org.assertj.core.api.Assertions.assertThat;

class ChartReadmeTest {

    /** Values documented as one row rather than key by key. */
    static final Set<String> DOCUMENTED_WHOLE = Set.of(
            "resources",
            "updateStrategy",
            "podSecurityContext",
            "securityContext",
            "probes.startup",
            "probes.liveness",
            "probes.readiness",
            "metrics.grafanaDashboard.labels");

    @Test
    void readmeListsEveryValue() throws IOException {
        Map<String, Object> values = new Yaml().load(Files.readString(Chart.DIR.resolve("values.yaml")));
        String readme = Files.readString(Chart.DIR.resolve("README.md"));
        List<String> paths = new ArrayList<>();
        collect("", values, paths);

        assertThat(paths).hasSizeGreaterThan(60).allSatisfy(path -> assertThat(readme)
                .as("README.md row for %s", path)
                .contains("| `" + path + "` |"));
    }

    @SuppressWarnings("unchecked")
    private static void collect(String prefix, Map<String, Object> node, List<String> paths) {
        node.forEach((key, value) -> {
            String path = prefix + key;
            if (value instanceof Map<?, ?> map && !map.isEmpty() && !DOCUMENTED_WHOLE.contains(path)) {
                collect(path + ".", (Map<String, Object>) map, paths);
            } else {
                paths.add(path);
            }
        });
    }
}
