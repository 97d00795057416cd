package io.delayrelay.app.config.nacos;

import java.util.ArrayList;
import java.util.List;

import org.springframework.core.env.Environment;

/**
 * One {@code nacos:} entry of {@code spring.config.import}: the data id and group the relay reads from Nacos.
 *
 * @param dataId data id
 * @param group  group
 */
public record NacosImport(String dataId, String group) {

    static final String PREFIX = "nacos:";
    static final String DEFAULT_GROUP = "DEFAULT_GROUP";

    /** The Nacos imports configured in {@code spring.config.import}; empty without any. */
    public static List<NacosImport> of(Environment environment) {
        String imports = environment.getProperty("spring.config.import", "");
        String defaultGroup = environment.getProperty("spring.cloud.nacos.config.group", DEFAULT_GROUP);
        List<NacosImport> result = new ArrayList<>();
        for (String location : imports.split(",")) {
            String value = location.trim();
            if (value.startsWith("optional:")) {
                value = value.substring("optional:".length());
            }
            if (!value.startsWith(PREFIX)) {
                continue;
            }
            String path = value.substring(PREFIX.length());
            String group = defaultGroup;
            int query = path.indexOf('?');
            if (query >= 0) {
                for (String parameter : path.substring(query + 1).split("&")) {
                    if (parameter.startsWith("group=") && parameter.length() > "group=".length()) {
                        group = parameter.substring("group=".length());
                    }
                }
                path = path.substring(0, query);
            }
            result.add(new NacosImport(path.startsWith("/") ? path.substring(1) : path, group));
        }
        return result;
    }

    /** The Nacos server address the imports are read from. */
    public static String serverAddr(Environment environment) {
        return environment.getProperty(
                "spring.cloud.nacos.config.server-addr",
                environment.getProperty("spring.cloud.nacos.server-addr", "127.0.0.1:8848"));
    }

    /** The namespace, or "public". */
    public static String namespace(Environment environment) {
        String namespace = environment.getProperty(
                "spring.cloud.nacos.config.namespace", environment.getProperty("spring.cloud.nacos.namespace", ""));
        return namespace.isBlank() ? "public" : namespace;
    }

    /** Whether Nacos config is imported at all (and not switched off). */
    public static boolean active(Environment environment) {
        return !of(environment).isEmpty()
                && environment.getProperty("spring.cloud.nacos.config.enabled", Boolean.class, true);
    }

    /** Prefix of the names of the property sources the Nacos loader creates for this import. */
    String propertySourcePrefix() {
        return group + "@" + dataId;
    }

    @Override
    public String toString() {
        return "data id '" + dataId + "' (group " + group + ")";
    }
}
