package io.delayrelay.helm;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import com.marcnuri.helm.Helm;
import io.delayrelay.app.config.BusinessSpecResolver;
import io.delayrelay.app.trigger.BusinessSpec;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code relay} part of values.schema.json is generated from the relay's Spring configuration metadata (the
 * configuration processor's output in the relay-app and relay-api jars, plus their additional metadata): one
 * source for the README's property tables, the IDE and the chart. When a property is added, regenerate it:
 * {@code ./mvnw -B verify -pl helm -am -Dtest=RelayValuesSchemaTest -Drelay.schema.write=true}.
 *
 * <p>Two deliberate departures from the metadata: operator tokens ({@link #SECRETS}) are refused, because values
 * end up in the ConfigMap, readable with the {@code view} role (they come from Secrets: {@code ops.existingSecret},
 * {@code ops.tokens}); and an enum-typed property lists its constants, since Spring binds them case-insensitively
 * but a typo only shows at start.
 */
class RelayValuesSchemaTest {

    private static final Path SCHEMA = Chart.DIR.resolve("values.schema.json");
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String DURATION = "^([0-9]+(ns|us|ms|s|m|h|d)?|[Pp][0-9A-Za-z.]+)$";
    private static final String BUSINESS_NAME = "^[a-z0-9]([a-z0-9-]*[a-z0-9])?$";
    /** Properties that hold operator tokens: never in values (S4), whether or not the metadata lists them. */
    static final List<String> SECRETS = List.of("relay.ops.token", "relay.ops.tokens");

    @Test
    @SuppressWarnings("unchecked")
    void relayPartIsGeneratedFromTheSpringConfigurationMetadata() throws Exception {
        Map<String, Object> schema = JSON.readValue(Files.readString(SCHEMA), Map.class);
        Map<String, Object> generated = generate();
        Map<String, Object> properties = (Map<String, Object>) schema.get("properties");
        if (Boolean.getBoolean("relay.schema.write")) {
            // A regeneration tool, not a check: a build run with this flag passes by construction, so CI refuses it
            // (scripts/test.sh never sets it). What is compared below is the file as read back from disk.
            assertThat(System.getenv("CI"))
                    .as("-Drelay.schema.write=true rewrites the schema it checks: never in CI")
                    .isNull();
            properties.put("relay", generated);
            Files.writeString(SCHEMA, Json.write(schema) + "\n", StandardCharsets.UTF_8);
            Map<String, Object> written = JSON.readValue(Files.readString(SCHEMA), Map.class);
            properties = (Map<String, Object>) written.get("properties");
        }
        assertThat(properties.get("relay"))
                .as("values.schema.json's relay part differs from the configuration metadata; regenerate it with"
                        + " ./mvnw -B verify -pl helm -am -Dtest=RelayValuesSchemaTest -Drelay.schema.write=true")
                .isEqualTo(generated);
    }

    @Test
    @SuppressWarnings("unchecked")
    void businessSettingsCarryTheRangesTheRelayValidates() throws Exception {
        Map<String, Object> schema = JSON.readValue(Files.readString(SCHEMA), Map.class);
        Map<String, Object> defaults = (Map<String, Object>) properties((Map<String, Object>)
                        properties((Map<String, Object>) properties(schema).get("relay"))
                                .get("defaults"))
                .get("threads");
        assertThat(defaults).containsEntry("minimum", 1).containsEntry("maximum", 256);
        Map<String, Object> business = (Map<String, Object>)
                properties((Map<String, Object>) ((Map<String, Object>) properties((Map<String, Object>)
                                                properties(schema).get("relay"))
                                        .get("businesses"))
                                .get("additionalProperties"))
                        .get("batch-size");
        assertThat(business).containsEntry("minimum", 1).containsEntry("maximum", 2000);

        var zeroThreads = new Helm(Chart.DIR)
                .template()
                .withName(Chart.RELEASE)
                .withKubeVersion(Chart.KUBE_VERSION)
                .set("relay.defaults.threads", "0");
        Assertions.assertThatThrownBy(zeroThreads::call).hasMessageContaining("threads");
        var hugeBatch = new Helm(Chart.DIR)
                .template()
                .withName(Chart.RELEASE)
                .withKubeVersion(Chart.KUBE_VERSION)
                .set("relay.businesses.orders.exchange", "x")
                .set("relay.businesses.orders.routing-key", "y")
                .set("relay.businesses.orders.batch-size", "2001");
        Assertions.assertThatThrownBy(hugeBatch::call).hasMessageContaining("batch-size");
        var noShards = new Helm(Chart.DIR)
                .template()
                .withName(Chart.RELEASE)
                .withKubeVersion(Chart.KUBE_VERSION)
                .set("relay.defaults.shards", "0");
        Assertions.assertThatThrownBy(noShards::call).hasMessageContaining("shards");
    }

    @Test
    void chartAcceptsEveryDocumentedRelayPropertyAndRejectsUnknownOnes() {
        var command = new Helm(Chart.DIR)
                .template()
                .withName(Chart.RELEASE)
                .withKubeVersion(Chart.KUBE_VERSION)
                .set("relay.reshard-grace", "1m")
                .set("relay.reload.enabled", "false")
                .set("relay.metrics.sample-interval", "10s")
                .set("relay.ops.dead-trim-interval", "5m")
                .set("relay.ops.console-enabled", "false")
                .set("relay.defaults.dead-max-size", "500")
                .set("relay.businesses.orders.exchange", "x")
                .set("relay.businesses.orders.routing-key", "y")
                .set("relay.businesses.orders.dead-max-age", "30d");
        assertThat(command.call()).contains("dead-max-age: 30d");

        var typo = new Helm(Chart.DIR)
                .template()
                .withName(Chart.RELEASE)
                .withKubeVersion(Chart.KUBE_VERSION)
                .set("relay.defaults.shard", "4");
        Assertions.assertThatThrownBy(typo::call).hasMessageContaining("shard");
    }

    /** The schema of {@code relay:} from every {@code relay.*} property in the metadata on the classpath. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> generate() throws IOException {
        Map<String, Map<String, Object>> byName = new TreeMap<>();
        Map<String, List<String>> hints = new LinkedHashMap<>();
        for (URL url : Collections.list(RelayValuesSchemaTest.class
                .getClassLoader()
                .getResources("META-INF/spring-configuration-metadata.json"))) {
            try (InputStream in = url.openStream()) {
                Map<String, Object> metadata = JSON.readValue(in, Map.class);
                for (Object p : (List<Object>) metadata.getOrDefault("properties", List.of())) {
                    Map<String, Object> property = (Map<String, Object>) p;
                    String name = (String) property.get("name");
                    if (name.startsWith("relay.")
                            && !name.equals("relay.businesses")
                            && !name.equals("relay.defaults")) {
                        byName.put(name, property);
                    }
                }
                for (Object h : (List<Object>) metadata.getOrDefault("hints", List.of())) {
                    Map<String, Object> hint = (Map<String, Object>) h;
                    List<String> values = new ArrayList<>();
                    ((List<Object>) hint.getOrDefault("values", List.of()))
                            .forEach(v -> values.add(String.valueOf(((Map<String, Object>) v).get("value"))));
                    hints.put((String) hint.get("name"), values);
                }
            }
        }
        Map<String, Object> relay = object();
        Map<String, Object> business = object();
        SECRETS.forEach(name -> byName.putIfAbsent(name, Map.of("name", name, "type", "java.lang.String")));
        byName.forEach((name, property) -> {
            Map<String, Object> schema =
                    SECRETS.contains(name) ? refused(name) : propertySchema(property, hints.get(name));
            if (name.startsWith("relay.defaults.")) {
                String key = name.substring("relay.defaults.".length());
                withRange(schema, BusinessSpecResolver.INTEGER_RANGES.get(key));
                put(business, key.split("\\."), schema); // a nested key (slo.on-time) is an object of its own
            } else {
                put(relay, name.substring("relay.".length()).split("\\."), schema);
            }
        });
        properties(relay).put("defaults", business);
        Map<String, Object> businesses = new LinkedHashMap<>();
        businesses.put("type", "object");
        businesses.put("description", "Businesses by name; each takes the same keys as defaults.");
        businesses.put("propertyNames", Map.of("pattern", BUSINESS_NAME));
        businesses.put("additionalProperties", business);
        properties(relay).put("businesses", businesses);
        properties(relay).put("intakes", intakes());
        properties(relay).put("schedules", schedules());
        return relay;
    }

    /** Adds the range the relay validates (minimum, and maximum unless unbounded) before the description. */
    private static void withRange(Map<String, Object> schema, BusinessSpec.Range range) {
        if (range == null) {
            return;
        }
        Object description = schema.remove("description");
        schema.put("minimum", range.min());
        if (range.max() != Integer.MAX_VALUE) {
            schema.put("maximum", range.max());
        }
        if (description != null) {
            schema.put("description", description);
        }
    }

    /** A schema no value satisfies, so Helm's error names the property; the description says where it goes. */
    private static Map<String, Object> refused(String name) {
        Map<String, Object> schema = new LinkedHashMap<>();
        // no value passes but this sentence, which Helm quotes in its error; templates fail on it too
        schema.put("const", "never in values: put the token in a Secret named by ops.existingSecret or ops.tokens");
        schema.put(
                "description",
                name + " must not be set in values (it would sit in the ConfigMap, readable with the view role).");
        return schema;
    }

    /** The constants of an enum-typed property in lower case (Spring binds them case-insensitively); null if none. */
    private static List<String> enumConstants(String type) {
        String name = type;
        while (true) {
            try {
                Class<?> candidate = Class.forName(name, false, RelayValuesSchemaTest.class.getClassLoader());
                if (!candidate.isEnum()) {
                    return null;
                }
                List<String> constants = new ArrayList<>();
                for (Object constant : candidate.getEnumConstants()) {
                    constants.add(((Enum<?>) constant).name().toLowerCase(Locale.ROOT));
                }
                return constants;
            } catch (ClassNotFoundException e) {
                int dot = name.lastIndexOf('.');
                if (dot < 0) {
                    return null;
                }
                name = name.substring(0, dot) + '$' + name.substring(dot + 1);
            }
        }
    }

    /** {@code relay.intakes.<name>.*}: the keys of {@code IntakeSettings} (the metadata only names the map). */
    private static Map<String, Object> intakes() {
        Map<String, Object> intake = object();
        properties(intake).put("exchange", Map.of("type", "string", "description", "Exchange publishers publish to."));
        properties(intake).put("deliver-to", Map.of("type", "string", "description", "Exchange due messages go to."));
        properties(intake).put("business", Map.of("type", "string", "description", "Business that holds the entries."));
        properties(intake)
                .put(
                        "max-delay",
                        Map.of("type", "string", "pattern", DURATION, "description", "Longest accepted delay."));
        properties(intake)
                .put(
                        "prefetch",
                        Map.of(
                                "type",
                                "integer",
                                "minimum",
                                1,
                                "maximum",
                                65535,
                                "description",
                                "Unacknowledged intake messages at once."));
        properties(intake)
                .put(
                        "compress",
                        Map.of(
                                "type",
                                "boolean",
                                "description",
                                "Store the messages compressed with a dictionary trained on the business's first ones."));
        Map<String, Object> intakes = new LinkedHashMap<>();
        intakes.put("type", "object");
        intakes.put(
                "description",
                "AMQP intakes by name (publishers send with an x-delay header, as to the delayed-message plugin).");
        intakes.put("propertyNames", Map.of("pattern", BUSINESS_NAME));
        intakes.put("additionalProperties", intake);
        return intakes;
    }

    /** {@code relay.schedules.<name>.*}: the keys of {@code ScheduleSettings} (the metadata only names the map). */
    private static Map<String, Object> schedules() {
        Map<String, Object> schedule = object();
        properties(schedule)
                .put(
                        "business",
                        Map.of(
                                "type",
                                "string",
                                "description",
                                "Business whose exchange, routing" + " key, shape and policies the messages get."));
        properties(schedule)
                .put("cron", Map.of("type", "string", "description", "Six fields, seconds first; or every."));
        properties(schedule)
                .put(
                        "every",
                        Map.of("type", "string", "pattern", DURATION, "description", "A fixed period, at least 1s."));
        properties(schedule).put("zone", Map.of("type", "string", "description", "Time zone of cron (IANA name)."));
        properties(schedule).put("payload", Map.of("type", "string", "description", "The message body."));
        properties(schedule)
                .put(
                        "headers",
                        Map.of(
                                "type",
                                "object",
                                "additionalProperties",
                                Map.of("type", "string"),
                                "description",
                                "AMQP headers of each message (not x-delay-*)."));
        properties(schedule)
                .put(
                        "catch-up",
                        Map.of(
                                "type",
                                "string",
                                "enum",
                                List.of("all", "last", "none"),
                                "description",
                                "Slots missed while no relay ran."));
        properties(schedule).put("paused", Map.of("type", "boolean", "description", "Fires nothing while true."));
        Map<String, Object> schedules = new LinkedHashMap<>();
        schedules.put("type", "object");
        schedules.put("description", "Recurring schedules by name (docs/schedules.md).");
        schedules.put("propertyNames", Map.of("pattern", BUSINESS_NAME));
        schedules.put("additionalProperties", schedule);
        return schedules;
    }

    private static Map<String, Object> propertySchema(Map<String, Object> property, List<String> hint) {
        Map<String, Object> schema = new LinkedHashMap<>();
        String type = String.valueOf(property.get("type"));
        switch (type) {
            case "java.lang.Boolean", "boolean" -> schema.put("type", "boolean");
            case "java.lang.Integer", "int", "java.lang.Long", "long" -> schema.put("type", "integer");
            case "java.lang.Double", "double" -> schema.put("type", "number");
            case "java.time.Duration" -> {
                schema.put("type", "string");
                schema.put("pattern", DURATION);
            }
            default -> {
                if (type.startsWith("java.util.Map<")) {
                    schema.put("type", "object");
                    schema.put("additionalProperties", Map.of("type", "string"));
                } else if (type.startsWith("java.util.List<") || type.startsWith("java.util.Set<")) {
                    schema.put("type", "array");
                } else {
                    schema.put("type", "string");
                }
            }
        }
        List<String> constants = enumConstants(type);
        if (hint != null && !hint.isEmpty()) {
            schema.put("enum", hint);
        } else if (constants != null) {
            schema.put("enum", constants);
        }
        Object description = property.get("description");
        if (description != null) {
            schema.put("description", description);
        }
        return schema;
    }

    @SuppressWarnings("unchecked")
    private static void put(Map<String, Object> node, String[] path, Map<String, Object> leaf) {
        Map<String, Object> current = node;
        for (int i = 0; i < path.length - 1; i++) {
            current = (Map<String, Object>) properties(current).computeIfAbsent(path[i], k -> object());
        }
        properties(current).put(path[path.length - 1], leaf);
    }

    private static Map<String, Object> object() {
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("type", "object");
        node.put("additionalProperties", false);
        node.put("properties", new LinkedHashMap<String, Object>());
        return node;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> properties(Map<String, Object> node) {
        return (Map<String, Object>) node.get("properties");
    }

    /** Just enough JSON to write the schema back, two-space indented like the rest of the chart's files. */
    static final class Json {

        private Json() {}

        static String write(Object value) {
            StringBuilder out = new StringBuilder();
            write(value, out, "");
            return out.toString();
        }

        @SuppressWarnings("unchecked")
        private static void write(Object value, StringBuilder out, String indent) {
            String inner = indent + "  ";
            if (value instanceof Map<?, ?> map) {
                if (map.isEmpty()) {
                    out.append("{}");
                    return;
                }
                out.append("{\n");
                int i = 0;
                for (Map.Entry<String, Object> e : ((Map<String, Object>) map).entrySet()) {
                    out.append(inner).append(string(e.getKey())).append(": ");
                    write(e.getValue(), out, inner);
                    out.append(++i < map.size() ? ",\n" : "\n");
                }
                out.append(indent).append('}');
            } else if (value instanceof List<?> list) {
                if (list.isEmpty()) {
                    out.append("[]");
                    return;
                }
                out.append("[\n");
                for (int i = 0; i < list.size(); i++) {
                    out.append(inner);
                    write(list.get(i), out, inner);
                    out.append(i + 1 < list.size() ? ",\n" : "\n");
                }
                out.append(indent).append(']');
            } else if (value instanceof String s) {
                out.append(string(s));
            } else {
                out.append(value);
            }
        }

        private static String string(String s) {
            StringBuilder out = new StringBuilder("\"");
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\t' -> out.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            out.append(String.format("\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                    }
                }
            }
            return out.append('"').toString();
        }
    }
}
