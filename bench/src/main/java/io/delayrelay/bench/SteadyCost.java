package io.delayrelay.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

/**
 * Where the CPU goes at a steady rate (issue 25): the relay JVM's CPU per thread group (read from
 * /proc/&lt;pid&gt;/task), the Redis commands per relayed message by type (INFO commandstats: a script's inner
 * commands count too), and the cores of relay, broker and Redis, over the steady part of one three-JVM lag run's
 * measured phase ({@link LagProcesses#STEADY_FROM_SECONDS}).
 */
record SteadyCost(
        String label,
        int rate,
        int relayed,
        double seconds,
        double relayCores,
        double brokerCores,
        double redisCores,
        Map<String, Double> threadCores,
        Map<String, Double> commandsPerMessage,
        double redisMicrosPerMessage,
        double scriptMicrosPerMessage) {

    /** Every run of this bench process, in order. */
    static final List<SteadyCost> ALL = new CopyOnWriteArrayList<>();

    /** CPU nanoseconds per thread group of process {@code pid} (digits, '#' and '-' at a name's end dropped). */
    static Map<String, Long> threads(long pid) {
        Map<String, Long> groups = new HashMap<>();
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        try (Stream<Path> list = Files.list(tasks)) {
            for (Path task : list.toList()) {
                try {
                    String name = Files.readString(task.resolve("comm")).trim();
                    long tid = Long.parseLong(task.getFileName().toString());
                    String stat = Files.readString(task.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long nanos = (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
                    groups.merge(group(name, tid == pid), nanos, Long::sum);
                } catch (IOException | RuntimeException gone) {
                    // a thread that ended between the listing and the read
                }
            }
        } catch (IOException e) {
            return Map.of();
        }
        return groups;
    }

    private static String group(String name, boolean main) {
        if (main) {
            return "main";
        }
        if (name.startsWith("C1 ") || name.startsWith("C2 ")) {
            return "JIT compiler";
        }
        if (name.startsWith("GC ") || name.startsWith("G1 ")) {
            return "GC";
        }
        return name.replaceAll("[-#0-9]+$", "");
    }

    static SteadyCost of(
            String label,
            int rate,
            int relayed,
            double seconds,
            double relayCores,
            double brokerCores,
            double redisCores,
            Map<String, Long> threads,
            RedisStats redis) {
        Map<String, Double> threadCores = new LinkedHashMap<>();
        threads.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), e.getValue() / 1e9 / seconds))
                .filter(e -> e.getValue() >= 0.005)
                .sorted((a, b) -> Double.compare(b.getValue(), a.getValue()))
                .limit(8)
                .forEach(e -> threadCores.put(e.getKey(), e.getValue()));
        Map<String, Double> commands = new LinkedHashMap<>();
        redis.calls().entrySet().stream()
                .filter(e -> !e.getKey().equals("info"))
                .map(e -> Map.entry(e.getKey().toUpperCase(Locale.ROOT), e.getValue() / (double) Math.max(1, relayed)))
                .filter(e -> e.getValue() >= 0.005)
                .sorted((a, b) -> Double.compare(b.getValue(), a.getValue()))
                .forEach(e -> commands.put(e.getKey(), e.getValue()));
        double perMessage = 1.0 / Math.max(1, relayed);
        return new SteadyCost(
                label,
                rate,
                relayed,
                seconds,
                relayCores,
                brokerCores,
                redisCores,
                threadCores,
                commands,
                redis.cpuSeconds() * 1e6 * perMessage,
                redis.scriptMicros() * perMessage);
    }

    double evalshaPerMessage() {
        return commandsPerMessage.getOrDefault("EVALSHA", 0.0) + commandsPerMessage.getOrDefault("EVAL", 0.0);
    }

    double commandsPerMessageTotal() {
        return commandsPerMessage.values().stream()
                .mapToDouble(Double::doubleValue)
                .sum();
    }

    void log() {
        Scenarios.log(
                "  where the CPU goes: relay %.2f cores (%s), broker %.2f, Redis %.2f (%.1f µs per relayed message, %.1f"
                        + " in scripts, wall clock); Redis commands per relayed message %.2f (%s)",
                relayCores,
                format(threadCores, "%.3f"),
                brokerCores,
                redisCores,
                redisMicrosPerMessage,
                scriptMicrosPerMessage,
                commandsPerMessageTotal(),
                format(commandsPerMessage, "%.3f"));
    }

    private static String format(Map<String, Double> values, String number) {
        List<String> parts = new ArrayList<>();
        values.forEach((k, v) -> parts.add(k + " " + String.format(Locale.ROOT, number, v)));
        return String.join(", ", parts);
    }

    /** The table of every run, for the report. */
    static void render(StringBuilder b) {
        if (ALL.isEmpty()) {
            return;
        }
        b.append(
                "\nWhere the CPU goes at steady rates (three-JVM runs above, the steady part of the measured phase: from "
                        + LagProcesses.STEADY_FROM_SECONDS
                        + " s after the first send, when every due time comes from a full "
                        + "5 s of sending, to the last send; 'relayed' is what the consumer received in it; relay threads in cores, "
                        + "grouped by name; Redis commands per relayed message by type from INFO commandstats, the commands "
                        + "scripts run included, producer writes included: the relay-api producer's schedule.lua is one "
                        + "EVALSHA per message (sent one round trip each, or pipelined by scheduleAll in the batches "
                        + "run), the plain ZADD producer's write one ZADD; Redis µs per relayed message: its used_cpu over the "
                        + "window, and in brackets the time spent inside scripts (EVALSHA/EVAL usec, their commands "
                        + "included): Redis times a command on the wall clock, so on a busy machine this counts the "
                        + "time the OS took Redis off the CPU too and is an upper bound, not CPU):\n\n");
        b.append("| run | rate | relayed | relay cores | broker cores | Redis cores | Redis µs / msg (in scripts) "
                + "| relay threads (cores) | Redis commands / relayed msg | by type |\n"
                + "|---|---:|---:|---:|---:|---:|---:|---|---:|---|\n");
        for (SteadyCost c : ALL) {
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %,d | %,d | %.2f | %.2f | %.2f | %.1f (%.1f) | %s | %.2f | %s |%n",
                    c.label(),
                    c.rate(),
                    c.relayed(),
                    c.relayCores(),
                    c.brokerCores(),
                    c.redisCores(),
                    c.redisMicrosPerMessage(),
                    c.scriptMicrosPerMessage(),
                    format(c.threadCores(), "%.3f"),
                    c.commandsPerMessageTotal(),
                    format(c.commandsPerMessage(), "%.3f")));
        }
    }
}
