package io.delayrelay.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bench measures the relay through its public surfaces only (issue 39): relay-api ({@code io.delayrelay.api},
 * not its {@code internal} package), the business model ({@code io.delayrelay.app.trigger}), {@code relay.*}
 * properties, documented meters and endpoints, or the exec jar. A reference to any other relay-app package (engine,
 * config, metrics, ...) or to relay-api's internals in a bench source fails the build.
 */
class PublicSurfaceTest {

    /** The harness and the bench's other Java tools, relative to the module (Maven's working directory). */
    private static final List<Path> SOURCES = List.of(Path.of("src/main/java"), Path.of("soak"), Path.of("profile"));

    /** Any mention of a relay class by package, in an import, a qualified name or a {@code @link}. */
    private static final Pattern RELAY_REFERENCE =
            Pattern.compile("io\\.delayrelay\\.(app|api)((?:\\.[a-z][a-z0-9_]*)*)(?:\\.[A-Z*]|\\b)");

    @Test
    void benchSourcesReferenceOnlyThePublicSurface() throws IOException {
        assertThat(Path.of("src/main/java"))
                .as("run from bench/ (Maven's working directory)")
                .isDirectory();
        List<String> offending = new ArrayList<>();
        for (Path root : SOURCES) {
            if (!Files.isDirectory(root)) {
                continue;
            }
            try (Stream<Path> files = Files.walk(root)) {
                for (Path file :
                        files.filter(f -> f.toString().endsWith(".java")).toList()) {
                    List<String> lines = Files.readAllLines(file);
                    for (int i = 0; i < lines.size(); i++) {
                        Matcher m = RELAY_REFERENCE.matcher(lines.get(i));
                        while (m.find()) {
                            if (!allowed(m.group(1), m.group(2))) {
                                offending.add(file + ":" + (i + 1) + ": "
                                        + lines.get(i).strip());
                            }
                        }
                    }
                }
            }
        }
        assertThat(offending)
                .as("bench sources that reach past the relay's public surface (use relay-api, relay.* properties,"
                        + " documented meters or the exec jar; docs/contributing/bench.md)")
                .isEmpty();
    }

    @Test
    void theRuleCatchesEngineConfigAndMetricsImports() {
        assertThat(allowedIn("import io.delayrelay.app.engine.RelayEvents;")).isFalse();
        assertThat(allowedIn("import io.delayrelay.app.engine.cold.ColdMover;")).isFalse();
        assertThat(allowedIn("import io.delayrelay.app.config.BusinessSettings;"))
                .isFalse();
        assertThat(allowedIn("import io.delayrelay.app.metrics.RelayMeterNames;"))
                .isFalse();
        assertThat(allowedIn("import io.delayrelay.api.internal.ByteRedisTemplates;"))
                .isFalse();
        assertThat(allowedIn("x = new io.delayrelay.app.engine.cold.ColdStore(t, 1);"))
                .isFalse();
        assertThat(allowedIn("import io.delayrelay.app.trigger.BusinessSpec;")).isTrue();
        assertThat(allowedIn("import io.delayrelay.api.RedisDelayedMessageProducer;"))
                .isTrue();
        assertThat(allowedIn("import io.delayrelay.bench.Infra;")).isTrue();
    }

    private static boolean allowedIn(String line) {
        Matcher m = RELAY_REFERENCE.matcher(line);
        while (m.find()) {
            if (!allowed(m.group(1), m.group(2))) {
                return false;
            }
        }
        return true;
    }

    /** {@code io.delayrelay.api} and its public subpackages but internal; of relay-app, the trigger package only. */
    private static boolean allowed(String module, String subpackage) {
        if (module.equals("api")) {
            return !subpackage.equals(".internal") && !subpackage.startsWith(".internal.");
        }
        return subpackage.equals(".trigger");
    }
}
