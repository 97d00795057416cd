package io.delayrelay.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time of the processes that share the machine in a drain, read from /proc (Linux): the harness JVM itself,
 * RabbitMQ's Erlang VM (every local {@code beam.smp}) and a child JVM (PerfTest). -1 where it cannot be read (no
 * /proc, or RabbitMQ not visible as a local process).
 */
final class ProcessCpu {

    /** /proc/<pid>/stat counts in clock ticks; USER_HZ is 100 on every Linux the bench runs on. */
    private static final long NANOS_PER_TICK = 10_000_000L;

    private ProcessCpu() {}

    /** CPU of this JVM (every thread, the JIT compiler and GC included). */
    static long self() {
        return Scenarios.processCpuNanos();
    }

    /**
     * user + system CPU of every local beam.smp (RabbitMQ), or -1 when none is visible. With BENCH_BROKER_PID set
     * (the bench measured on a private RabbitMQ node, see bench.sh --help), only that process: other nodes on the
     * machine are not charged.
     */
    static long broker() {
        String pid = System.getenv("BENCH_BROKER_PID");
        if (pid != null && !pid.isBlank()) {
            return of(Long.parseLong(pid.trim()));
        }
        long[] sum = {0};
        boolean[] found = {false};
        ProcessHandle.allProcesses()
                .filter(p ->
                        p.info().command().map(c -> c.endsWith("/beam.smp")).orElse(false))
                .forEach(p -> {
                    long cpu = of(p.pid());
                    if (cpu >= 0) {
                        sum[0] += cpu;
                        found[0] = true;
                    }
                });
        return found[0] ? sum[0] : -1;
    }

    /** user + system CPU of process {@code pid}, or -1 when it cannot be read (gone, or no /proc). */
    static long of(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            // fields after the command name (which may hold spaces) start at state, field 3; utime, stime = 14, 15
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * NANOS_PER_TICK;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Snapshot of the broker's and one more process's CPU (-1 for none). */
    record Snapshot(long brokerNanos, long otherNanos) {

        static Snapshot take(long otherPid) {
            return new Snapshot(broker(), otherPid < 0 ? -1 : of(otherPid));
        }

        /** Nanoseconds since {@code before}: broker, other (-1 where either reading is missing). */
        long[] since(Snapshot before) {
            return new long[] {delta(before.brokerNanos, brokerNanos), delta(before.otherNanos, otherNanos)};
        }

        private static long delta(long a, long b) {
            return a < 0 || b < 0 ? -1 : b - a;
        }
    }
}
