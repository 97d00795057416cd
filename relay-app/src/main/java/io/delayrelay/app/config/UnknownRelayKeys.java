package io.delayrelay.app.config;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import io.delayrelay.app.trigger.ConfigProblem;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;

/**
 * Finds {@code relay.*} keys that no relay setting reads. Spring Boot binds leniently: a misspelt key such as
 * {@code relay.businesses.orders.max-lateness} was silently ignored and the business ran on defaults the operator
 * thought they had changed. The valid names come from the configuration metadata the build generates from the
 * {@code @ConfigurationProperties} classes (plus the hand-written additional metadata), so a new setting needs no
 * change here; a key under {@code relay.businesses.<name>} is valid when the same key is valid under
 * {@code relay.defaults}.
 *
 * <p>Environment variables are not checked: Kubernetes puts {@code RELAY_*} variables of its own into a pod (service
 * links of a Service named {@code relay}), and the daemon's placeholders are {@code RELAY_*} names. Files, the
 * config center, command-line arguments and system properties are checked.
 */
public final class UnknownRelayKeys {

    private static final ConfigurationPropertyName RELAY = ConfigurationPropertyName.of("relay");
    private static final ConfigurationPropertyName BUSINESSES = ConfigurationPropertyName.of("relay.businesses");
    private static final ConfigurationPropertyName DEFAULTS = ConfigurationPropertyName.of("relay.defaults");
    private static final String[] METADATA = {
        "classpath*:META-INF/spring-configuration-metadata.json",
        "classpath*:META-INF/additional-spring-configuration-metadata.json"
    };

    private static volatile UnknownRelayKeys fromClasspath;

    /** Leaf settings (exact names) and map-valued settings (any key below them is theirs). */
    private final Set<ConfigurationPropertyName> leaves;

    private final Set<ConfigurationPropertyName> maps;

    UnknownRelayKeys(Map<String, String> typesByName) {
        Set<ConfigurationPropertyName> leafNames = new LinkedHashSet<>();
        Set<ConfigurationPropertyName> mapNames = new LinkedHashSet<>();
        typesByName.forEach((name, type) -> {
            if (!ConfigurationPropertyName.isValid(name)) {
                return;
            }
            ConfigurationPropertyName parsed = ConfigurationPropertyName.of(name);
            if (!RELAY.isAncestorOf(parsed)) {
                return;
            }
            if (type != null && type.startsWith("java.util.Map")) {
                mapNames.add(parsed);
            } else {
                leafNames.add(parsed);
            }
        });
        this.leaves = Set.copyOf(leafNames);
        this.maps = Set.copyOf(mapNames);
    }

    /** The relay settings known from the configuration metadata on the class path (read once). */
    public static UnknownRelayKeys fromClasspath() {
        UnknownRelayKeys known = fromClasspath;
        if (known == null) {
            known = new UnknownRelayKeys(readMetadata());
            fromClasspath = known;
        }
        return known;
    }

    /**
     * One problem per unknown {@code relay.*} key in the environment, naming the key and the closest valid name;
     * empty when every key is known (or no metadata is on the class path, e.g. a shaded jar that dropped it).
     */
    public List<ConfigProblem> problems(Environment environment) {
        if (leaves.isEmpty() || !(environment instanceof ConfigurableEnvironment configurable)) {
            return List.of();
        }
        Map<String, ConfigurationPropertyName> found = new TreeMap<>();
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(configurable)) {
            if (!(source instanceof IterableConfigurationPropertySource iterable)
                    || source.getUnderlyingSource() instanceof SystemEnvironmentPropertySource
                    || isEnvironmentVariables(source.getUnderlyingSource())) {
                continue;
            }
            iterable.stream()
                    .filter(RELAY::isAncestorOf)
                    .filter(name -> !known(name))
                    .forEach(name -> found.putIfAbsent(name.toString(), name));
        }
        List<ConfigProblem> problems = new ArrayList<>();
        for (ConfigurationPropertyName name : found.values()) {
            String suggestion = closest(name);
            String business =
                    BUSINESSES.isAncestorOf(name) ? name.getElement(2, ConfigurationPropertyName.Form.ORIGINAL) : "";
            problems.add(new ConfigProblem(
                    business,
                    name.toString(),
                    null,
                    name + " is unknown (no relay setting reads it)"
                            + (suggestion == null ? "" : "; did you mean " + suggestion + "?")));
        }
        return problems;
    }

    private static boolean isEnvironmentVariables(Object underlying) {
        return underlying instanceof PropertySource<?> source
                && (source instanceof SystemEnvironmentPropertySource
                        || source.getName().contains("systemEnvironment"));
    }

    /** Whether a setting reads {@code name}: it is one, lies below a map-valued one, or groups some. */
    boolean known(ConfigurationPropertyName name) {
        if (BUSINESSES.isAncestorOf(name)) {
            if (name.getNumberOfElements() == 3) {
                return true; // relay.businesses.<name> itself (e.g. an empty block)
            }
            return known(DEFAULTS.append(name.subName(3)));
        }
        if (leaves.contains(name)) {
            return true;
        }
        for (ConfigurationPropertyName map : maps) {
            if (map.equals(name) || map.isAncestorOf(name)) {
                return true;
            }
        }
        // a group with no value of its own (an empty "relay.ops:" block)
        for (ConfigurationPropertyName leaf : leaves) {
            if (name.isAncestorOf(leaf)) {
                return true;
            }
        }
        return false;
    }

    /** The valid name nearest to {@code name} by edit distance, written the way the operator would write it. */
    private String closest(ConfigurationPropertyName name) {
        String prefix = "";
        ConfigurationPropertyName lookup = name;
        if (BUSINESSES.isAncestorOf(name) && name.getNumberOfElements() > 3) {
            prefix = name.chop(3) + ".";
            lookup = DEFAULTS.append(name.subName(3));
        }
        String wanted = lookup.toString();
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        List<ConfigurationPropertyName> candidates = new ArrayList<>(leaves);
        candidates.addAll(maps);
        candidates.sort(Comparator.comparing(ConfigurationPropertyName::toString));
        for (ConfigurationPropertyName candidate : candidates) {
            if (!prefix.isEmpty() && !DEFAULTS.isAncestorOf(candidate)) {
                continue;
            }
            int distance = distance(wanted, candidate.toString());
            if (distance < bestDistance) {
                bestDistance = distance;
                best = candidate.toString();
            }
        }
        if (best == null || bestDistance > Math.max(3, wanted.length() / 2)) {
            return null;
        }
        return prefix.isEmpty()
                ? best
                : prefix + best.substring(DEFAULTS.toString().length() + 1);
    }

    /** Levenshtein distance. */
    static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> readMetadata() {
        Map<String, String> types = new TreeMap<>();
        PathMatchingResourcePatternResolver resolver =
                new PathMatchingResourcePatternResolver(UnknownRelayKeys.class.getClassLoader());
        for (String pattern : METADATA) {
            try {
                for (Resource resource : resolver.getResources(pattern)) {
                    try (InputStream in = resource.getInputStream()) {
                        Map<String, Object> json = JsonParserFactory.getJsonParser()
                                .parseMap(new String(in.readAllBytes(), StandardCharsets.UTF_8));
                        Object properties = json.get("properties");
                        if (properties instanceof List<?> list) {
                            for (Object item : list) {
                                if (item instanceof Map<?, ?> property && property.get("name") instanceof String n) {
                                    types.put(n, (String) ((Map<String, Object>) property).get("type"));
                                }
                            }
                        }
                    }
                }
            } catch (IOException e) {
                throw new IllegalStateException("cannot read the relay's configuration metadata (" + pattern + ")", e);
            }
        }
        return types;
    }
}
