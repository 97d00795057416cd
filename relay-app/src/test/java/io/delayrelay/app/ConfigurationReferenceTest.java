package io.delayrelay.app;

import java.beans.BeanInfo;
import java.beans.Introspector;
import java.beans.PropertyDescriptor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayrelay.api.autoconfigure.DelayRelayProducerProperties;
import io.delayrelay.app.config.BusinessSettings;
import io.delayrelay.app.config.RelayProperties;
import io.delayrelay.app.config.nacos.RelayNacosProperties;
import io.delayrelay.app.fleet.RelayFleetProperties;
import io.delayrelay.app.metrics.RelayMetricsProperties;
import io.delayrelay.app.ops.RelayOpsProperties;
import org.junit.jupiter.api.Test;
import org.springframework.util.unit.DataSize;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The property tables of docs/configuration.md are the truth users read: every property is listed there, with the
 * default the code really uses (defaults are defined once, in the properties classes). The README's settings summary
 * repeats some rows; each must say what the reference says.
 */
class ConfigurationReferenceTest {

    private static final String REFERENCE = "docs/configuration.md";
    private static final Pattern ROW = Pattern.compile("^\\| `([^`]+)` \\| (.+?) \\|", Pattern.MULTILINE);

    @Test
    void theReferenceListsEveryPropertyWithTheDefaultTheCodeUses() throws Exception {
        Map<String, String> documented = referenceRows();
        List<String> problems = new ArrayList<>();
        check(problems, documented, "…", new BusinessSettings());
        check(problems, documented, "relay.", new RelayProperties());
        check(problems, documented, "relay.wake.", new RelayProperties.Wake());
        check(problems, documented, "relay.metrics.", new RelayMetricsProperties());
        check(problems, documented, "relay.ops.", new RelayOpsProperties());
        check(problems, documented, "relay.nacos.", new RelayNacosProperties());
        check(problems, documented, "relay.fleet.", new RelayFleetProperties());
        check(problems, documented, "relay.producer.", new DelayRelayProducerProperties());
        assertThat(problems).isEmpty();
    }

    /**
     * What IDEs show (the configuration processor's metadata, plus META-INF/additional-spring-configuration-metadata.json)
     * matches the reference: every {@code relay.*} property, {@code relay.defaults.*} expanded, with its default,
     * described in plain text (no Javadoc tags).
     */
    @Test
    void generatedMetadataDescribesEveryDocumentedPropertyInPlainText() throws Exception {
        Map<String, String> documented = referenceRows();
        JsonNode metadata = JsonMapper.builder()
                .build()
                .readTree(Path.of("target", "classes", "META-INF", "spring-configuration-metadata.json")
                        .toFile());
        List<String> problems = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (JsonNode property : metadata.get("properties")) {
            String name = property.get("name").asString();
            if (!name.startsWith("relay.") || name.equals("relay.businesses") || name.equals("relay.defaults")) {
                continue;
            }
            names.add(name);
            String row = name.startsWith("relay.defaults.") ? "…" + name.substring("relay.defaults.".length()) : name;
            String cell = documented.get(row);
            String description =
                    property.has("description") ? property.get("description").asString() : "";
            if (cell == null) {
                problems.add(row + " is in the metadata but not in " + REFERENCE);
            } else if (property.has("defaultValue")
                    && !cell.equals("`" + property.get("defaultValue").asString() + "`")) {
                problems.add(row + ": " + REFERENCE + " says " + cell + ", the metadata's default is "
                        + property.get("defaultValue"));
            }
            if (description.isBlank() || description.contains("{@")) {
                problems.add(name + ": description missing or not plain text: '" + description + "'");
            }
        }
        assertThat(problems).isEmpty();
        assertThat(names)
                .contains(
                        "relay.defaults.shards",
                        "relay.defaults.exchange-type",
                        "relay.defaults.dead-max-size",
                        "relay.reload.enabled",
                        "relay.ops.console-enabled");
        List<String> exchangeTypes = new ArrayList<>();
        for (JsonNode hint : metadata.get("hints")) {
            if (hint.get("name").asString().equals("relay.defaults.exchange-type")) {
                hint.get("values").forEach(v -> exchangeTypes.add(v.get("value").asString()));
            }
        }
        assertThat(exchangeTypes).containsExactly("direct", "topic", "fanout", "headers");
    }

    @Test
    void theReadmeSettingsSummaryAgreesWithTheReference() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"), StandardCharsets.UTF_8);
        int start = readme.indexOf("\n## Settings\n");
        assertThat(start).as("README.md has a '## Settings' section").isNotNegative();
        int end = readme.indexOf("\n## ", start + 1);
        Map<String, String> summary = rows(readme.substring(start, end < 0 ? readme.length() : end));
        Map<String, String> reference = referenceRows();
        assertThat(summary).as("README settings rows").hasSizeGreaterThanOrEqualTo(10);
        summary.forEach((name, cell) -> assertThat(reference.get(name))
                .as("the default of %s in README.md and %s", name, REFERENCE)
                .isEqualTo(cell));
    }

    private static Map<String, String> referenceRows() throws Exception {
        return rows(Files.readString(Path.of("..", REFERENCE), StandardCharsets.UTF_8));
    }

    private static Map<String, String> rows(String text) {
        Map<String, String> rows = new LinkedHashMap<>();
        Matcher m = ROW.matcher(text);
        while (m.find()) {
            rows.putIfAbsent(m.group(1), m.group(2).trim());
        }
        return rows;
    }

    private static void check(List<String> problems, Map<String, String> documented, String prefix, Object defaults)
            throws Exception {
        BeanInfo info = Introspector.getBeanInfo(defaults.getClass(), Object.class);
        for (PropertyDescriptor property : info.getPropertyDescriptors()) {
            Class<?> type = property.getPropertyType();
            if (property.getWriteMethod() == null
                    || !(type.isPrimitive()
                            || type == String.class
                            || type == Duration.class
                            || type == DataSize.class)) {
                continue;
            }
            String name = prefix + kebab(property.getName());
            String cell = documented.get(name);
            if (cell == null) {
                problems.add(name + " is not in " + REFERENCE);
                continue;
            }
            Object value = property.getReadMethod().invoke(defaults);
            if (value != null && !cell.equals("`" + format(value) + "`")) {
                problems.add(
                        name + ": " + REFERENCE + " says " + cell + ", the code's default is `" + format(value) + "`");
            }
        }
    }

    static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase();
    }

    static String format(Object value) {
        if (value instanceof Duration d) {
            long ms = d.toMillis();
            if (ms % 86_400_000 == 0) {
                return ms / 86_400_000 + "d";
            }
            if (ms % 3_600_000 == 0) {
                return ms / 3_600_000 + "h";
            }
            if (ms % 60_000 == 0) {
                return ms / 60_000 + "m";
            }
            return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
        }
        if (value instanceof DataSize size) {
            long bytes = size.toBytes();
            if (bytes % DataSize.ofMegabytes(1).toBytes() == 0) {
                return size.toMegabytes() + "MB";
            }
            return bytes % 1024 == 0 ? size.toKilobytes() + "KB" : bytes + "B";
        }
        return String.valueOf(value);
    }
}
