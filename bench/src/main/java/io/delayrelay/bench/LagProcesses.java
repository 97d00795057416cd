package io.delayrelay.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The lag scenario with the relay, the producer and the consumer in three JVMs: the relay is the shipped exec jar
 * ({@code java -jar relay-app-*-exec.jar --k=v ...}), the producer and the consumer are {@link LagProcess} on the
 * bench's classpath. All on one host, so System.currentTimeMillis is one clock for all three; the relay decides due
 * by Redis TIME. Every process's output goes to a log file under the bench's log folder.
 */
final class LagProcesses {

    /** Processes started and not yet stopped: killed if the harness is interrupted (Ctrl-C, timeout). */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly), "lag-cleanup"));
    }

    private final Infra infra;
    private final BenchConfig config;
    private final Path relayJar;
    private final Path logs;
    /**
     * Seconds of traffic that warm a fresh relay JVM before its first measured run. Its JIT compilers keep working
     * well after the hot paths are first compiled: the exec jar at 2,000 msg/s (due 1-5 s ahead, lead 20 ms) spent
     * 0.155 cores compiling in its first 30 s, 0.017-0.039 in each 30 s until 160 s and 0.004-0.011 from 190 s on
     * (rarely taken branches that trap into the interpreter and are compiled again), so 30 s of warm-up left a third
     * of the relay's cores in a measured run to the compiler, which a daemon running all day does not pay.
     */
    static final int WARM_UP_SECONDS = 180;

    private Process relay;
    private String relayBusiness;
    private String relayExchange;

    LagProcesses(Infra infra, Path relayJar, Path logs) {
        this.infra = infra;
        this.config = infra.config;
        this.relayJar = relayJar;
        this.logs = logs;
    }

    /** One run: relay (1 business, 16 shards, defaults) + producer at {@code rate} + consumer, in three JVMs. */
    Scenarios.Lag run(String label, String exchange, String queue, String producerMode, int rate, int seconds)
            throws Exception {
        Scenarios.log(
                "lag: %s at %,d msg/s for %d s (relay, producer and consumer in separate JVMs)", label, rate, seconds);
        if (relayJar == null || !Files.isRegularFile(relayJar)) {
            throw new IllegalStateException("no relay exec jar: " + relayJar + " (bench.sh builds and passes it)");
        }
        Files.createDirectories(logs);
        String tag = producerMode + "-" + rate;
        infra.purge(queue);
        List<Process> processes = new ArrayList<>();
        try {
            // One relay JVM for every separate-JVM run, as a daemon runs: started at the first run and warmed up
            // there with WARM_UP_SECONDS of traffic (a fresh JVM's compilers settle after about 3 minutes, see there).
            boolean fresh = relay == null || !relay.isAlive() || !exchange.equals(relayExchange);
            if (fresh) {
                stopRelay();
                relayBusiness = infra.name("lag");
                relayExchange = exchange;
                Path relayLog = logs.resolve("lag-relay.log");
                relay = startRelay(relayBusiness, exchange, relayLog);
                LIVE.add(relay);
                awaitLogLine(relay, relayLog, "delay-relay started", 90);
            }
            String business = relayBusiness;

            Path records = logs.resolve("lag-" + tag + "-received.txt");
            Process consumer = java(
                    logs.resolve("lag-" + tag + "-consumer.err"),
                    "consumer",
                    config.rabbitHost(),
                    Integer.toString(config.rabbitPort()),
                    queue,
                    records.toString());
            processes.add(consumer);
            LIVE.add(consumer);
            AtomicInteger count = new AtomicInteger();
            CompletableFuture<Void> ready = new CompletableFuture<>();
            CompletableFuture<Integer> total = new CompletableFuture<>();
            lines(consumer, line -> {
                if (line.equals("ready")) {
                    ready.complete(null);
                } else if (line.startsWith("count ")) {
                    count.set(Integer.parseInt(line.substring(6)));
                } else if (line.startsWith("received ")) {
                    total.complete(Integer.parseInt(line.substring(9)));
                }
            });
            ready.get(60, TimeUnit.SECONDS);

            Process producer = java(
                    logs.resolve("lag-" + tag + "-producer.err"),
                    "producer",
                    config.redisHost(),
                    Integer.toString(config.redisPort()),
                    business,
                    Integer.toString(config.shards()),
                    Integer.toString(rate),
                    Integer.toString(seconds),
                    producerMode,
                    Integer.toString(config.messageBytes()),
                    Integer.toString(fresh ? WARM_UP_SECONDS : NEXT_WARM_UP_SECONDS));
            processes.add(producer);
            LIVE.add(producer);
            CompletableFuture<String> summary = new CompletableFuture<>();
            CompletableFuture<Integer> warm = new CompletableFuture<>();
            lines(producer, line -> {
                if (line.startsWith("warm ")) {
                    warm.complete(Integer.parseInt(line.substring(5)));
                } else if (line.startsWith("sent ")) {
                    summary.complete(line);
                }
            });
            int warmUp = warm.get(WARM_UP_SECONDS + 120L, TimeUnit.SECONDS);
            awaitJitIdle(List.of(relay, producer, consumer));
            OutputStream go = producer.getOutputStream();
            go.write("go\n".getBytes(StandardCharsets.US_ASCII));
            go.flush();
            long relayCpu0 = cpuMs(relay); // the measured phase starts now
            long[] cpu0 = cpuNanos(producer, consumer);
            long wall0 = System.nanoTime();
            // Where the CPU goes is read over the steady part of the phase only (see STEADY_FROM_SECONDS)
            Steady steady = null;
            if (seconds > STEADY_FROM_SECONDS) {
                Steady from = steadySnapshot(wall0 + TimeUnit.SECONDS.toNanos(STEADY_FROM_SECONDS), count);
                Steady to = steadySnapshot(wall0 + TimeUnit.SECONDS.toNanos(seconds), count);
                steady = to.minus(from);
            }
            String[] s = summary.get(seconds + 120L, TimeUnit.SECONDS).split(" ");
            int sent = Integer.parseInt(s[1]);
            double achieved = Double.parseDouble(s[3]);
            long lastDue = Long.parseLong(s[5]);
            long errors = Long.parseLong(s[7]);
            long producerCpuNanos = Long.parseLong(s[9]); // its measured phase, as the producer read it
            if (errors > 0) {
                Scenarios.log("  warning: the producer had %,d errors (see its log)", errors);
            }
            long giveUp = lastDue + 5_000;
            while (count.get() < warmUp + sent && System.currentTimeMillis() < giveUp) {
                Thread.sleep(20);
            }
            long relayCpuMs = cpuMs(relay) - relayCpu0;
            long[] cpu1 = cpuNanos(producer, consumer);
            long wallNanos = System.nanoTime() - wall0;
            cpu0[3] = 0;
            cpu1[3] = producerCpuNanos;
            String cores = cores(cpu1, cpu0, wallNanos);
            OutputStream stdin = consumer.getOutputStream();
            stdin.close();
            total.get(60, TimeUnit.SECONDS); // the consumer wrote its records

            List<String> rows = Files.readAllLines(records, StandardCharsets.UTF_8);
            rows.removeIf(r -> r.endsWith(" " + LagProcess.WARM_UP_ID));
            int got = rows.size();
            long[] lags = new long[got];
            long[] toPublished = new long[got];
            long[] toReceived = new long[got];
            int joined = 0;
            for (int i = 0; i < got; i++) {
                String[] f = rows.get(i).split(" ");
                long receivedAt = Long.parseLong(f[0]);
                long due = Long.parseLong(f[1]);
                long relayedAt = Long.parseLong(f[2]);
                lags[i] = receivedAt - due;
                if (relayedAt >= 0) {
                    toPublished[joined] = relayedAt - due;
                    toReceived[joined] = receivedAt - relayedAt;
                    joined++;
                }
            }
            Arrays.sort(lags);
            if (steady != null) {
                SteadyCost cost = SteadyCost.of(
                        label,
                        rate,
                        steady.received(),
                        steady.wallNanos() / 1e9,
                        steady.cpu()[0] / (double) steady.wallNanos(),
                        steady.cpu()[1] / (double) steady.wallNanos(),
                        steady.cpu()[2] / (double) steady.wallNanos(),
                        steady.threads(),
                        steady.redis());
                SteadyCost.ALL.add(cost);
                cost.log();
            }
            Scenarios.Stages stages = new Scenarios.Stages(
                    joined,
                    Scenarios.Stages.SEPARATE,
                    new long[][] {percentiles(toPublished, joined), percentiles(toReceived, joined)},
                    got == 0 ? Double.NaN : relayCpuMs * 1000.0 / got,
                    cores);
            Scenarios.Lag lag = new Scenarios.Lag(
                    label,
                    rate,
                    achieved,
                    sent,
                    got,
                    Scenarios.pct(lags, 0.50),
                    Scenarios.pct(lags, 0.99),
                    Scenarios.pct(lags, 0.999),
                    got == 0 ? -1 : lags[got - 1],
                    stages);
            Scenarios.logStages(stages);
            Scenarios.log("  cores busy (relay / broker / Redis / producer / consumer = total): %s", cores);
            Scenarios.log(
                    "  sent %,d (%,.0f/s) received %,d: p50 %d p99 %d p999 %d max %d ms; relay JVM CPU %.0f µs/msg",
                    lag.sent(),
                    achieved,
                    lag.received(),
                    lag.p50(),
                    lag.p99(),
                    lag.p999(),
                    lag.max(),
                    stages.relayCpuMicrosPerMessage());
            Files.deleteIfExists(records);
            return lag;
        } finally {
            for (int i = processes.size() - 1; i >= 0; i--) {
                stop(processes.get(i));
                LIVE.remove(processes.get(i));
            }
            infra.purge(queue);
        }
    }

    /** Stops the relay JVM of the separate-JVM runs (SIGTERM) and removes the run's keys. */
    void close() throws InterruptedException {
        stopRelay();
        infra.deleteRunKeys();
    }

    private void stopRelay() throws InterruptedException {
        if (relay != null) {
            stop(relay);
            LIVE.remove(relay);
            relay = null;
        }
    }

    private Process startRelay(String business, String exchange, Path log) throws IOException {
        List<String> command = new ArrayList<>(List.of(javaBinary(), "-Xmx512m", "-jar", relayJar.toString()));
        Map<String, Object> p = RelayContender.baseProperties(infra);
        p.remove("logging.level.root"); // keep the relay's own INFO log: "delay-relay started" is awaited
        p.put("spring.main.web-application-type", "none");
        String prefix = "relay.businesses." + business + ".";
        p.put(prefix + "exchange", exchange);
        p.put(prefix + "routing-key", "due");
        p.put(prefix + "shards", config.shards());
        p.forEach((k, v) -> command.add("--" + k + "=" + v));
        return new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    /** A {@link LagProcess} JVM: stdout is read by the harness, stderr goes to {@code err}. */
    private static Process java(Path err, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                javaBinary(), "-Xmx512m", "-cp", System.getProperty("java.class.path"), LagProcess.class.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectError(err.toFile()).start();
    }

    private static void lines(Process process, Consumer<String> handler) {
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader r = new BufferedReader(
                            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = r.readLine()) != null) {
                            handler.accept(line);
                        }
                    } catch (IOException | RuntimeException e) {
                        // the process ended
                    }
                },
                "lag-process-reader");
        reader.setDaemon(true);
        reader.start();
    }

    /** Waits until the relay process logs {@code text} (the storm scenario starts its relay the same way). */
    static void awaitLogLine(Process process, Path log, String text, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < deadline) {
            if (Files.exists(log) && Files.readString(log).contains(text)) {
                return;
            }
            if (!process.isAlive()) {
                throw new IllegalStateException(
                        "the relay exited (code " + process.exitValue() + ") before \"" + text + "\"; see " + log);
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the relay did not log \"" + text + "\" within " + seconds + " s; see " + log);
    }

    private static void stop(Process process) throws InterruptedException {
        if (process.isAlive()) {
            process.destroy(); // SIGTERM: the relay stops gracefully
            if (!process.waitFor(40, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** CPU ns so far of: the relay, the broker, Redis, the producer, the consumer (-1 where unreadable). */
    private long[] cpuNanos(Process producer, Process consumer) {
        return new long[] {
            ProcessCpu.of(relay.pid()),
            ProcessCpu.broker(),
            (long) (infra.stats().cpuSeconds() * 1e9),
            ProcessCpu.of(producer.pid()),
            ProcessCpu.of(consumer.pid())
        };
    }

    /** "0.61 / 0.40 / 0.22 / 0.30 / 0.12 = 1.65": cores each process kept busy over {@code wallNanos}. */
    private static String cores(long[] after, long[] before, long wallNanos) {
        StringBuilder b = new StringBuilder();
        double total = 0;
        for (int i = 0; i < after.length; i++) {
            double c = after[i] < 0 || before[i] < 0 ? Double.NaN : (after[i] - before[i]) / (double) wallNanos;
            b.append(i == 0 ? "" : " / ").append(String.format(java.util.Locale.ROOT, "%.2f", c));
            total += Double.isNaN(c) ? 0 : c;
        }
        return b.append(String.format(java.util.Locale.ROOT, " = %.2f", total)).toString();
    }

    /**
     * Waits (at most {@link #JIT_IDLE_TIMEOUT_SECONDS}) until no JIT compiler thread of the given JVMs used CPU for
     * {@link #JIT_IDLE_MS}: a JVM compiling its hot paths on 2 cores delays everything else, and that is start-up
     * cost, not lag. Reads /proc/&lt;pid&gt;/task/*&#47;{comm,stat}; without /proc it returns at once.
     */
    private static void awaitJitIdle(List<Process> jvms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(JIT_IDLE_TIMEOUT_SECONDS);
        long last = jitNanos(jvms);
        long quietSince = System.nanoTime();
        while (System.nanoTime() < deadline) {
            Thread.sleep(200);
            long now = jitNanos(jvms);
            if (now != last) {
                last = now;
                quietSince = System.nanoTime();
            } else if (System.nanoTime() - quietSince >= TimeUnit.MILLISECONDS.toNanos(JIT_IDLE_MS)) {
                return;
            }
        }
        Scenarios.log("  note: JIT compilers still busy after %d s; measuring anyway", JIT_IDLE_TIMEOUT_SECONDS);
    }

    /**
     * Where the CPU goes is read from this many seconds after the first send until the last send: a message is due
     * 1-5 s after it was sent, so from here on every due time comes from a full 5 s of sending, and until the last
     * send the producer writes at the rate too; the relay then relays the run's rate, not its ramp up (the first
     * second, nothing is due) or its tail (the last 5 s, fewer and fewer), which a whole-phase average mixes in.
     */
    static final int STEADY_FROM_SECONDS = 5;

    /** CPU (relay, broker, Redis), relay threads, Redis commands and messages received, read at one moment. */
    private record Steady(long wallNanos, long[] cpu, Map<String, Long> threads, RedisStats redis, int received) {

        Steady minus(Steady from) {
            long[] d = new long[cpu.length];
            for (int i = 0; i < d.length; i++) {
                d[i] = cpu[i] - from.cpu[i];
            }
            Map<String, Long> t = new HashMap<>();
            threads.forEach((k, v) -> t.put(k, v - from.threads.getOrDefault(k, 0L)));
            return new Steady(wallNanos - from.wallNanos, d, t, redis.minusCalls(from.redis), received - from.received);
        }
    }

    /** Waits until {@code atNanos} (System.nanoTime), then reads a {@link Steady}. */
    private Steady steadySnapshot(long atNanos, AtomicInteger received) throws InterruptedException {
        long wait = atNanos - System.nanoTime();
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
        }
        long now = System.nanoTime();
        RedisStats redis = infra.stats();
        long[] cpu = {ProcessCpu.of(relay.pid()), ProcessCpu.broker(), (long) (redis.cpuSeconds() * 1e9)};
        return new Steady(now, cpu, SteadyCost.threads(relay.pid()), redis, received.get());
    }

    /** Warm-up of a run's fresh producer and consumer JVMs when the relay JVM is already warm. */
    static final int NEXT_WARM_UP_SECONDS = 5;

    static final int JIT_IDLE_TIMEOUT_SECONDS = 90;
    static final long JIT_IDLE_MS = 3_000;

    private static long jitNanos(List<Process> jvms) {
        long sum = 0;
        for (Process p : jvms) {
            Path tasks = Path.of("/proc", Long.toString(p.pid()), "task");
            try (var dirs = Files.list(tasks)) {
                for (Path task : (Iterable<Path>) dirs::iterator) {
                    try {
                        String comm = Files.readString(task.resolve("comm")).trim();
                        if (comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler")) {
                            String stat = Files.readString(task.resolve("stat"));
                            String[] f =
                                    stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                            sum += Long.parseLong(f[11]) + Long.parseLong(f[12]);
                        }
                    } catch (IOException | RuntimeException e) {
                        // the thread ended
                    }
                }
            } catch (IOException e) {
                // no /proc, or the process ended
            }
        }
        return sum;
    }

    /** User + system CPU time of a process so far, in ms (from /proc/&lt;pid&gt;/stat; 0 where there is no /proc). */
    private static long cpuMs(Process process) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * 10; // utime + stime, USER_HZ 100
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private static long[] percentiles(long[] values, int n) {
        long[] sorted = Arrays.copyOf(values, n);
        Arrays.sort(sorted);
        return new long[] {Scenarios.pct(sorted, 0.50), Scenarios.pct(sorted, 0.99), Scenarios.pct(sorted, 0.999)};
    }

    private static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }
}
