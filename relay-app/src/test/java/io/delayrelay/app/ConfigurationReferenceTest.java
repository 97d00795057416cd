package io.delayrelay.app;

import static org.assertj.core.api.Assertions.assertThat;

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

/**
 * The README's property tables are the truth users read: every property is listed there, with the default the
 * code really uses (defaults are defined once, in the properties classes).
 */
class ConfigurationReferenceTest {

    private static final Pattern ROW = Pattern.compile("^\\| `([^`]+)` \\| (.+?) \\|", Pattern.MULTILINE);

    @Test
    void readmeListsEveryPropertyWithTheDefaultTheCodeUses() throws Exception {
        Map<String, String> documented = readmeRows();
        List<String> problems = new ArrayList<>();
        check(problems, documented, "…", new BusinessSettings());
        check(problems, documented, "relay.", new RelayProperties());
        check(problems, documented, "relay.metrics.", new RelayMetricsProperties());
        check(problems, documented, "relay.ops.", new RelayOpsProperties());
        check(problems, documented, "relay.nacos.", new RelayNacosProperties());
        check(problems, documented, "relay.fleet.", new RelayFleetProperties());
        check(problems, documented, "relay.producer.", new DelayRelayProducerProperties());
        assertThat(problems).isEmpty();
    }

    private static Map<String, String> readmeRows() throws Exception {
        Path readme = Path.of("..", "README.md");
        String text = Files.readString(readme, StandardCharsets.UTF_8);
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
            if (property.getWriteMethod() == null || !(type.isPrimitive() || type == String.class || type == Duration.class
                    || type == DataSize.class)) {
                continue;
            }
            String name = prefix + kebab(property.getName());
            String cell = documented.get(name);
            if (cell == null) {
                problems.add(name + " is not in the README's property tables");
                continue;
            }
            Object value = property.getReadMethod().invoke(defaults);
            if (value != null && !cell.equals("`" + format(value) + "`")) {
                problems.add(name + ": README says " + cell + ", the code's default is `" + format(value) + "`");
            }
        }
    }

    static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase();
    }

    static String format(Object value) {
        if (value instanceof Duration d) {
            long ms = d.toMillis();
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
