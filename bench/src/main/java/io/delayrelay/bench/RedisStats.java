package io.delayrelay.bench;

import java.util.HashMap;
import java.util.Map;

/**
 * One INFO snapshot: command calls (total and EVALSHA/EVAL), CPU seconds, used memory, and the microseconds Redis
 * spent running scripts (EVALSHA/EVAL's {@code usec}: the commands they call included).
 */
record RedisStats(
        long totalCalls,
        long scriptCalls,
        double cpuSeconds,
        long usedMemory,
        Map<String, Long> calls,
        long scriptMicros) {

    static RedisStats parse(String info) {
        long total = 0;
        long scripts = 0;
        double cpu = 0;
        long memory = 0;
        long scriptMicros = 0;
        Map<String, Long> calls = new HashMap<>();
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                int at = line.indexOf("calls=") + "calls=".length();
                long n = Long.parseLong(line.substring(at, line.indexOf(',', at)));
                calls.put(name, n);
                // INFO itself is the harness asking, not the system under test
                if (!name.equals("info")) {
                    total += n;
                }
                if (name.equals("evalsha") || name.equals("eval")) {
                    scripts += n;
                    int u = line.indexOf("usec=") + "usec=".length();
                    scriptMicros += Long.parseLong(line.substring(u, line.indexOf(',', u)));
                }
            } else if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
                cpu += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
            } else if (line.startsWith("used_memory:")) {
                memory = Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return new RedisStats(total, scripts, cpu, memory, calls, scriptMicros);
    }

    /** What happened between {@code before} and this snapshot. */
    Delta since(RedisStats before) {
        return new Delta(
                totalCalls - before.totalCalls,
                scriptCalls - before.scriptCalls,
                cpuSeconds - before.cpuSeconds,
                usedMemory - before.usedMemory);
    }

    /** The commands called between {@code before} and this snapshot, by name, as a snapshot of its own. */
    RedisStats minusCalls(RedisStats before) {
        Map<String, Long> d = new HashMap<>();
        calls.forEach((k, v) -> d.put(k, v - before.calls.getOrDefault(k, 0L)));
        return new RedisStats(
                totalCalls - before.totalCalls,
                scriptCalls - before.scriptCalls,
                cpuSeconds - before.cpuSeconds,
                usedMemory,
                d,
                scriptMicros - before.scriptMicros);
    }

    record Delta(long totalCalls, long scriptCalls, double cpuSeconds, long memory) {}
}
