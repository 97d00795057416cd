package io.delayrelay.app.architecture;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shape of relay-app, read from its sources: which package may import which, no package cycle, and no main
 * class of relay-app or relay-api over {@value #MAX_LINES} lines (no exceptions). Data flows one way: the business model
 * ({@code trigger}) and {@code support} depend on nothing; the loop ({@code engine}) on them and on its wake-up
 * sources; its adapters ({@code engine.amqp}) on the loop's port types; configuration, fleet, metrics and ops on
 * the engine, never the other way.
 */
class PackageDependenciesTest {

    static final int MAX_LINES = 400;

    private static final String ROOT = "io.delayrelay.app";
    private static final Path SOURCES = Path.of("src/main/java/io/delayrelay/app");
    private static final Path API_SOURCES = Path.of("../relay-api/src/main/java/io/delayrelay/api");
    private static final Pattern IMPORT =
            Pattern.compile("^import (?:static )?io\\.delayrelay\\.app\\.([a-z.]+)\\.[A-Z]", Pattern.MULTILINE);

    /** package (relative to {@value #ROOT}) -> packages it imports from. */
    private static final Map<String, Set<String>> graph = new TreeMap<>();

    private static final Map<String, Integer> lines = new TreeMap<>();

    @BeforeAll
    static void readSources() throws IOException {
        assertThat(SOURCES).as("run from relay-app (Maven's working directory)").isDirectory();
        try (Stream<Path> files = Files.walk(SOURCES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                String text = Files.readString(file);
                String pkg = SOURCES.relativize(file.getParent()).toString().replace('/', '.');
                Set<String> imports = graph.computeIfAbsent(pkg, p -> new TreeSet<>());
                Matcher m = IMPORT.matcher(text);
                while (m.find()) {
                    if (!m.group(1).equals(pkg)) {
                        imports.add(m.group(1));
                    }
                }
                String name = pkg + "." + file.getFileName().toString().replace(".java", "");
                lines.put(name, (int) text.lines().count());
            }
        }
        assertThat(API_SOURCES).as("relay-api beside relay-app").isDirectory();
        try (Stream<Path> files = Files.walk(API_SOURCES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                lines.put("api." + API_SOURCES.relativize(file).toString().replace('/', '.'), (int)
                        Files.readString(file).lines().count());
            }
        }
    }

    @Test
    void theEngineImportsNoConfigurationFleetMetricsOrOps() {
        graph.forEach((pkg, imports) -> {
            if (pkg.equals("engine") || pkg.startsWith("engine.")) {
                assertThat(imports)
                        .as("imports of %s", pkg)
                        .noneMatch(i -> i.startsWith("config")
                                || i.startsWith("fleet")
                                || i.startsWith("metrics")
                                || i.startsWith("ops")
                                || i.startsWith("demo"));
            }
        });
    }

    @Test
    void theLoopKnowsItsAdaptersOnlyThroughItsPorts() {
        assertThat(graph.get("engine")).as("the loop imports no adapter").doesNotContain("engine.amqp");
        assertThat(graph.get("engine.wake"))
                .as("wake-up sources reach a business only through ShardWakeups")
                .allMatch(i -> i.equals("support"));
        assertThat(graph.get("engine.amqp")).as("the AMQP adapter").allMatch(i -> Set.of("engine", "support", "trigger")
                .contains(i));
    }

    @Test
    void theBuildingBlocksDependOnNothingOfTheApp() {
        assertThat(graph.get("support")).isEmpty();
        assertThat(graph.get("trigger")).isEmpty();
    }

    @Test
    void noPackageCycle() {
        List<List<String>> cycles = new ArrayList<>();
        for (String start : graph.keySet()) {
            List<String> path = new ArrayList<>();
            path.add(start);
            findCycle(start, start, path, new HashSet<>(), cycles);
        }
        assertThat(cycles).as("package cycles").isEmpty();
    }

    private static void findCycle(
            String start, String at, List<String> path, Set<String> seen, List<List<String>> cycles) {
        for (String next : graph.getOrDefault(at, Set.of())) {
            if (next.equals(start)) {
                List<String> cycle = new ArrayList<>(path);
                cycle.add(start);
                cycles.add(cycle);
            } else if (seen.add(next)) {
                path.add(next);
                findCycle(start, next, path, seen, cycles);
                path.remove(path.size() - 1);
            }
        }
    }

    @Test
    void noMainClassIsOverTheLimit() {
        List<String> tooLong = lines.entrySet().stream()
                .filter(e -> e.getValue() > MAX_LINES)
                .map(e -> e.getKey() + " (" + e.getValue() + " lines)")
                .toList();
        assertThat(tooLong)
                .as("main classes over %d lines: split them by job", MAX_LINES)
                .isEmpty();
    }
}
