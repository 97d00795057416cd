package io.delayrelay.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import org.springframework.context.ConfigurableApplicationContext;

/** The measurements themselves. Each leaves Redis and the queue empty behind it. */
final class Scenarios {

    /** One drain measurement. */
    record Drain(
            String label,
            String settings,
            String shape,
            int n,
            long delivered,
            long elapsedMs,
            boolean capped,
            RedisStats.Delta redis,
            long loadMs,
            boolean loadOverlapped,
            long memoryDelta,
            long clientCpuNanos,
            long brokerCpuNanos,
            long perfTestCpuNanos,
            long javaThreadsCpuNanos) {

        /** CPU per relayed message in µs of a process's CPU delta over the window; NaN when not measured. */
        double microsPerMessage(long cpuNanos) {
            return delivered == 0 || cpuNanos < 0 ? Double.NaN : cpuNanos / 1e3 / delivered;
        }

        /** CPU the contender's JVM (relay or baseline, plus the harness's depth polling) spent per 1,000 relayed. */
        double clientCpuMsPer1k() {
            return delivered == 0 ? Double.NaN : clientCpuNanos / 1e6 * 1000.0 / delivered;
        }

        double rate() {
            return elapsedMs <= 0 ? 0 : delivered * 1000.0 / elapsedMs;
        }

        double scriptsPer1k() {
            return delivered == 0 ? Double.NaN : redis.scriptCalls() * 1000.0 / delivered;
        }

        double commandsPer1k() {
            return delivered == 0 ? Double.NaN : redis.totalCalls() * 1000.0 / delivered;
        }

        double cpuPer100k() {
            return delivered == 0 ? Double.NaN : redis.cpuSeconds() * 100_000.0 / delivered;
        }

        double bytesPerMessage() {
            return memoryDelta * 1.0 / n;
        }
    }

    /** One lag measurement; {@code stages} is null for contenders that do not report them. */
    record Lag(
            String label,
            int rate,
            double achievedRate,
            int sent,
            int received,
            long p50,
            long p99,
            long p999,
            long max,
            Stages stages) {}

    /**
     * Where the lag goes: p50/p99/p999 ms of each stage, in the order of {@code names} ({@link #IN_PROCESS} or
     * {@link #SEPARATE}); {@code relayCpuMicrosPerMessage} is NaN where the relay shares the harness's JVM.
     */
    record Stages(int joined, String[] names, long[][] percentiles, double relayCpuMicrosPerMessage, String cores) {

        Stages(int joined, String[] names, long[][] percentiles, double relayCpuMicrosPerMessage) {
            this(joined, names, percentiles, relayCpuMicrosPerMessage, null);
        }

        /**
         * The stages of an in-process relay: the same two as {@link #SEPARATE} (the popped and confirmed instants came
         * from the engine's events, which the bench no longer reads: bench/README.md). A distinct array: the report
         * tells the two runs apart by identity.
         */
        static final String[] IN_PROCESS = {"due->published", "published->received"};

        static final String[] SEPARATE = {"due->published", "published->received"};
    }

    /** Commands by type between two INFO commandstats readings (INFO left out), times {@code scale}, busiest first. */
    private static Map<String, Double> byType(RedisStats s0, RedisStats s1, double scale, int limit) {
        Map<String, Double> top = new LinkedHashMap<>();
        s1.calls().entrySet().stream()
                .filter(e -> !e.getKey().equals("info"))
                .map(e -> Map.entry(e.getKey(), (e.getValue() - s0.calls().getOrDefault(e.getKey(), 0L)) * scale))
                .filter(e -> e.getValue() > 0)
                .sorted((a, b) -> Double.compare(b.getValue(), a.getValue()))
                .limit(limit)
                .forEach(e -> top.put(e.getKey(), Math.round(e.getValue() * 100) / 100.0));
        return top;
    }

    /** Idle cost. */
    record Idle(
            String settings,
            int instances,
            int businesses,
            int shards,
            double commandsPerSecond,
            double scriptsPerSecond,
            Map<String, Double> top) {}

    private final Infra infra;
    private final BenchConfig config;
    private final String exchange;
    private final String queue;
    private final Map<String, Double> loadRates = new HashMap<>();
    /** JIT compile time (ms) inside the last drain's measured window. */
    private long lastDrainJitMs;

    Scenarios(Infra infra) throws IOException {
        this.infra = infra;
        this.config = infra.config;
        String[] xq = infra.exchangeAndQueue("drain");
        this.exchange = xq[0];
        this.queue = xq[1];
    }

    String exchange() {
        return exchange;
    }

    static void log(String format, Object... args) {
        System.err.printf("[bench] " + format + "%n", args);
    }

    // ------------------------------------------------------------------------------------------------ drain

    Drain drain(Contender contender, String settings, long spreadMs, long capMs) throws Exception {
        return drain(contender, settings, spreadMs, capMs, null);
    }

    /**
     * Runs {@code beforeLoad} (e.g. loads a backlog), starts the contender, loads N messages due at an instant T chosen after the predicted end of loading (all at
     * T, or spread over [T, T + spread)), then measures from T until the queue holds N (or the cap passes).
     */
    Drain drain(Contender contender, String settings, long spreadMs, long capMs, Runnable beforeLoad) throws Exception {
        for (int attempt = 1; ; attempt++) {
            Drain d = drainOnce(contender, settings, spreadMs, capMs, beforeLoad, attempt < MAX_DRAIN_ATTEMPTS);
            if (d != null) {
                return d;
            }
            log("  loading overran the due instant: the drain is measured again with the loading rate just seen");
        }
    }

    /**
     * A drain whose loading ended after the due instant would measure the contender racing its own loading, not
     * draining (the 3-instance drain of 2026-11-27 read 0.56x that way): it is run again, up to this many times in
     * all, with a due instant chosen from the loading rate the overrun measured; the last attempt is reported as it
     * is, marked as overlapped.
     */
    private static final int MAX_DRAIN_ATTEMPTS = 3;

    /** One attempt of {@link #drain}; null when loading overran the due instant and {@code retryOnOverlap}. */
    private Drain drainOnce(
            Contender contender,
            String settings,
            long spreadMs,
            long capMs,
            Runnable beforeLoad,
            boolean retryOnOverlap)
            throws Exception {
        int n = config.drainMessages();
        String shape = spreadMs == 0 ? "all at once" : "spread " + spreadMs + " ms";
        log("drain: %s (%s), %,d messages, %s", contender.label(), settings, n, shape);
        infra.purge(queue);
        try {
            // Before the contender starts: with keyspace notifications, a backlog loaded under a running relay
            // would be measured as the relay digesting one notification per loaded entry during the drain.
            if (beforeLoad != null) {
                beforeLoad.run();
            }
            contender.start();
            awaitJitQuiet();
            // per contender and settings: three relay instances load slower than one (each decodes the load's
            // keyspace notifications), so one instance's rate put the 3-instance due instant inside its loading
            String rateKey = contender.getClass().getSimpleName() + "/" + contender.label() + "/" + settings;
            double loadRate = loadRates.getOrDefault(rateKey, contender.loadRateGuess());
            long t = System.currentTimeMillis() + (long) (n / loadRate * 1000 * 1.3) + 800;
            long[] dues = Messages.dues(n, t, spreadMs);
            List<byte[]> bodies = Messages.bodies(dues, config.messageBytes(), 0);
            RedisStats m0 = infra.stats();
            long loadMs = contender.load(bodies, dues);
            RedisStats m1 = infra.stats();
            bodies = null;
            loadRates.put(rateKey, n * 1000.0 / Math.max(1, loadMs));
            boolean overlapped = System.currentTimeMillis() > t;
            if (overlapped) {
                log("  warning: loading ended %d ms after the due instant", System.currentTimeMillis() - t);
                if (retryOnOverlap) {
                    return null;
                }
            }
            sleepUntil(t - 3);
            RedisStats s0 = infra.stats();
            ProcessCpu.Snapshot p0 = ProcessCpu.Snapshot.take(-1);
            long jit0 = jitMs();
            Map<Long, Long> threads0 = javaThreadsCpu();
            long cpu0 = processCpuNanos();
            long deadline = t + capMs;
            long depth = 0;
            long end;
            while (true) {
                depth = infra.depth(queue);
                end = System.currentTimeMillis();
                if (depth >= n || end > deadline) {
                    break;
                }
                Thread.sleep(5);
            }
            long cpu1 = processCpuNanos();
            long threadsCpu = javaThreadsCpuSince(threads0);
            long jit = jitMs() - jit0;
            lastDrainJitMs = jit;
            ProcessCpu.Snapshot p1 = ProcessCpu.Snapshot.take(-1);
            RedisStats s1 = infra.stats();
            if (depth > 0) {
                log("  Redis commands per 1,000 relayed by type: %s", byType(s0, s1, 1000.0 / depth, 14));
            }
            boolean capped = depth < n;
            Drain d = new Drain(
                    contender.label(),
                    settings,
                    shape,
                    n,
                    depth,
                    end - t,
                    capped,
                    s1.since(s0),
                    loadMs,
                    overlapped,
                    m1.usedMemory() - m0.usedMemory(),
                    cpu1 - cpu0,
                    p1.since(p0)[0],
                    -1,
                    threadsCpu);
            log(
                    "  %,.0f msg/s (%,d in %,d ms%s), load %,d ms; JVM CPU %.1f µs/msg (Java threads %.1f), "
                            + "JIT compiling %,d ms in the window",
                    d.rate(),
                    depth,
                    end - t,
                    capped ? ", capped" : "",
                    loadMs,
                    d.microsPerMessage(d.clientCpuNanos()),
                    d.microsPerMessage(threadsCpu),
                    jit);
            return d;
        } finally {
            contender.close();
            infra.purge(queue);
            infra.deleteRunKeys();
        }
    }

    /**
     * Waits (at most 20 s) until the JIT compiler has been idle for 300 ms. Starting a Spring context hands the
     * compiler a backlog that it otherwise works off inside the measured window: on 2 cores that doubled the JVM
     * CPU per message of whichever drain came first after a context start (38 µs at defaults vs 18 µs at 4 threads
     * in one run), a cost a long-running relay pays once at start, not per message.
     */
    /** CPU time of every live Java thread of this JVM, by thread id (JIT compiler and GC threads are not Java threads). */
    static Map<Long, Long> javaThreadsCpu() {
        java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Map<Long, Long> cpu = new HashMap<>();
        if (threads.isThreadCpuTimeSupported()) {
            for (long id : threads.getAllThreadIds()) {
                long t = threads.getThreadCpuTime(id);
                if (t >= 0) {
                    cpu.put(id, t);
                }
            }
        }
        return cpu;
    }

    /**
     * CPU the Java threads spent since {@code before} (a thread started since counts from 0; one that ended since
     * is missed, none of the relay's do during a drain): the JVM's CPU without JIT compiling, GC and VM threads.
     */
    static long javaThreadsCpuSince(Map<Long, Long> before) {
        long sum = 0;
        for (Map.Entry<Long, Long> e : javaThreadsCpu().entrySet()) {
            sum += Math.max(0, e.getValue() - before.getOrDefault(e.getKey(), 0L));
        }
        return sum;
    }

    /** JIT compile time (ms) inside the last drain's measured window. */
    long lastDrainJitMs() {
        return lastDrainJitMs;
    }

    /** Total time the JIT compiler threads spent compiling so far (ms), or 0 when not monitored. */
    static long jitMs() {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit == null || !jit.isCompilationTimeMonitoringSupported() ? 0 : jit.getTotalCompilationTime();
    }

    static void awaitJitQuiet() throws InterruptedException {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        long start = System.currentTimeMillis();
        long deadline = start + 20_000;
        long last = jit.getTotalCompilationTime();
        int quiet = 0;
        while (quiet < 3 && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
            long now = jit.getTotalCompilationTime();
            quiet = now - last <= 2 ? quiet + 1 : 0;
            last = now;
        }
        log("  JIT %s after %,d ms", quiet >= 3 ? "idle" : "still busy", System.currentTimeMillis() - start);
    }

    /** The ceiling: best over batch sizes of publishing from memory with confirms. */
    Drain ceiling(int threads, int batch) throws Exception {
        int n = config.drainMessages();
        log("ceiling: %d threads, confirm every %d", threads, batch);
        infra.purge(queue);
        try {
            long t0 = System.currentTimeMillis();
            List<byte[]> bodies = Messages.bodies(Messages.dues(n, t0, 0), config.messageBytes(), 0);
            awaitJitQuiet();
            long t = System.currentTimeMillis();
            ProcessCpu.Snapshot p0 = ProcessCpu.Snapshot.take(-1);
            long cpu0 = processCpuNanos();
            Ceiling.publish(infra, exchange, bodies, threads, batch);
            long depth;
            long end;
            do {
                depth = infra.depth(queue);
                end = System.currentTimeMillis();
                if (depth < n) {
                    Thread.sleep(5);
                }
            } while (depth < n && end - t < config.drainCapMs());
            long cpu1 = processCpuNanos();
            ProcessCpu.Snapshot p1 = ProcessCpu.Snapshot.take(-1);
            Drain d = new Drain(
                    "ceiling (publish from memory)",
                    threads + " threads, confirm every " + batch,
                    "all at once",
                    n,
                    depth,
                    end - t,
                    depth < n,
                    new RedisStats.Delta(0, 0, 0, 0),
                    0,
                    false,
                    0,
                    cpu1 - cpu0,
                    p1.since(p0)[0],
                    -1,
                    -1); // its publisher threads end inside the window: their CPU cannot be read apart
            log("  %,.0f msg/s", d.rate());
            return d;
        } finally {
            infra.purge(queue);
        }
    }

    // ------------------------------------------------------------------------------------------------ backlog

    /** Loads {@code entries} members due a day from now into the relay's shards (chunked, pipelined). */
    Runnable backlog(Supplier<String> business, int entries) {
        return () -> {
            log("  loading a backlog of %,d entries due in a day", entries);
            long start = System.currentTimeMillis();
            long due = System.currentTimeMillis() + 86_400_000L;
            int chunk = 200_000;
            try {
                for (int from = 0; from < entries; from += chunk) {
                    int size = Math.min(chunk, entries - from);
                    long[] dues = new long[size];
                    Arrays.fill(dues, due);
                    infra.loadShards(
                            DelayQueueKeys.forBusiness(business.get()),
                            config.shards(),
                            Messages.bodies(dues, config.messageBytes(), 1_000_000_000L + from),
                            dues);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            log("  backlog loaded in %,d ms", System.currentTimeMillis() - start);
        };
    }

    // ------------------------------------------------------------------------------------------------ lag

    Lag lag(Contender contender, int rate, int seconds) throws Exception {
        log("lag: %s at %,d msg/s for %d s", contender.label(), rate, seconds);
        infra.purge(queue);
        int expected = rate * seconds;
        long[] lags = new long[expected + 1024];
        long[] relayedAt = new long[lags.length];
        long[] receivedAt = new long[lags.length];
        AtomicInteger received = new AtomicInteger();
        Channel consumer = infra.amqp().createChannel();
        try {
            contender.start();
            consumer.basicQos(2_000);
            consumer.basicConsume(queue, true, new DefaultConsumer(consumer) {
                @Override
                public void handleDelivery(String tag, Envelope env, AMQP.BasicProperties props, byte[] body) {
                    long now = System.currentTimeMillis();
                    Object header = props.getHeaders() == null
                            ? null
                            : props.getHeaders().get(RelayHeaders.DUE_AT);
                    long due = header instanceof Number num ? num.longValue() : Messages.dueOf(body);
                    int i = received.getAndIncrement();
                    if (i < lags.length) {
                        lags[i] = now - due;
                        Object relayed = props.getHeaders() == null
                                ? null
                                : props.getHeaders().get(RelayHeaders.RELAYED_AT);
                        relayedAt[i] = relayed instanceof Number num ? num.longValue() : -1;
                        receivedAt[i] = now;
                    }
                }
            });
            // the same pacing as the three-JVM producer (LagProcess), due 1-5 s ahead
            LagProcess.Paced paced =
                    LagProcess.pace(rate, expected, 0, 1_000, 4_000, config.messageBytes(), contender::schedule);
            AtomicInteger sent = paced.sent();
            AtomicLong lastDue = paced.lastDue();
            double achieved = paced.achieved();
            long giveUp = lastDue.get() + 5_000;
            while (received.get() < sent.get() && System.currentTimeMillis() < giveUp) {
                Thread.sleep(20);
            }
            int got = Math.min(received.get(), lags.length);
            long[] sorted = Arrays.copyOf(lags, got);
            Arrays.sort(sorted);
            Stages stages = stages(got, lags, relayedAt, receivedAt);
            Lag lag = new Lag(
                    contender.label(),
                    rate,
                    achieved,
                    sent.get(),
                    received.get(),
                    pct(sorted, 0.50),
                    pct(sorted, 0.99),
                    pct(sorted, 0.999),
                    got == 0 ? -1 : sorted[got - 1],
                    stages);
            if (stages != null) {
                logStages(stages);
            }
            log(
                    "  sent %,d (%,.0f/s) received %,d: p50 %d p99 %d p999 %d max %d ms",
                    lag.sent(), achieved, lag.received(), lag.p50(), lag.p99(), lag.p999(), lag.max());
            return lag;
        } finally {
            try {
                consumer.close();
            } catch (Exception ignored) {
                // closing anyway
            }
            contender.close();
            infra.purge(queue);
            infra.deleteRunKeys();
        }
    }

    /** The lag scenario with the relay, the producer and the consumer in three JVMs (see {@link LagProcesses}). */
    Lag lagSeparate(LagProcesses processes, String label, String producerMode, int rate, int seconds) throws Exception {
        return processes.run(label, exchange, queue, producerMode, rate, seconds);
    }

    /**
     * Where the lag went for an in-process relay, from the consumer's view only: the relay's documented headers
     * (x-delay-due-at, x-delay-relayed-at = publish instant) and the receive instant. Null when no message carried a
     * relayed-at header (a baseline).
     */
    private static Stages stages(int got, long[] lags, long[] relayedAt, long[] receivedAt) {
        long[][] values = new long[Stages.IN_PROCESS.length][got];
        int joined = 0;
        for (int i = 0; i < got; i++) {
            if (relayedAt[i] < 0) {
                continue;
            }
            long due = receivedAt[i] - lags[i];
            values[0][joined] = relayedAt[i] - due;
            values[1][joined] = receivedAt[i] - relayedAt[i];
            joined++;
        }
        if (joined == 0) {
            return null;
        }
        long[][] percentiles = new long[Stages.IN_PROCESS.length][];
        for (int k = 0; k < Stages.IN_PROCESS.length; k++) {
            long[] sorted = Arrays.copyOf(values[k], joined);
            Arrays.sort(sorted);
            percentiles[k] = new long[] {pct(sorted, 0.50), pct(sorted, 0.99), pct(sorted, 0.999)};
        }
        return new Stages(joined, Stages.IN_PROCESS, percentiles, Double.NaN);
    }

    static void logStages(Stages stages) {
        for (int k = 0; k < stages.names().length; k++) {
            log(
                    "  %s: p50 %d p99 %d p999 %d ms",
                    stages.names()[k],
                    stages.percentiles()[k][0],
                    stages.percentiles()[k][1],
                    stages.percentiles()[k][2]);
        }
    }

    static long pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    // ------------------------------------------------------------------------------------------------ idle

    /**
     * @param maxIdle   relay max-idle, or null for the default
     * @param instances relay instances sharing the businesses
     * @param notify    whether Redis keyspace notifications are on (else the relay polls at max-idle)
     */
    Idle idle(String maxIdle, int instances, boolean notify) throws Exception {
        int businesses = config.idleBusinesses();
        log(
                "idle: %d instance(s), %d businesses x %d shards, nothing due, notifications %s, %d s",
                instances, businesses, config.shards(), notify ? "on" : "off", config.idleSeconds());
        Map<String, Object> p = RelayContender.baseProperties(infra);
        for (int b = 0; b < businesses; b++) {
            String prefix = "relay.businesses." + infra.name("idle") + ".";
            p.put(prefix + "exchange", exchange);
            p.put(prefix + "routing-key", "due");
            p.put(prefix + "shards", config.shards());
            if (maxIdle != null) {
                p.put(prefix + "max-idle", maxIdle);
            }
        }
        if (!notify) {
            p.put("relay.wake.keyspace-events", "off");
        }
        List<ConfigurableApplicationContext> relays = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            relays.add(RelayContender.startRelay(p));
        }
        try {
            Thread.sleep(2_000);
            RedisStats s0 = infra.stats();
            long t0 = System.nanoTime();
            Thread.sleep(config.idleSeconds() * 1_000L);
            RedisStats s1 = infra.stats();
            double secs = (System.nanoTime() - t0) / 1e9;
            RedisStats.Delta d = s1.since(s0);
            Map<String, Double> top = byType(s0, s1, 1 / secs, 6);
            String settings = (notify ? "notifications on" : "notifications off") + ", "
                    + (maxIdle == null ? "max-idle 100ms (default)" : "max-idle " + maxIdle);
            Idle idle = new Idle(
                    settings,
                    instances,
                    businesses,
                    config.shards(),
                    d.totalCalls() / secs,
                    d.scriptCalls() / secs,
                    top);
            log("  %,.0f commands/s (%,.0f EVALSHA/s): %s", idle.commandsPerSecond(), idle.scriptsPerSecond(), top);
            return idle;
        } finally {
            relays.forEach(ConfigurableApplicationContext::close);
            infra.deleteRunKeys();
        }
    }

    // ------------------------------------------------------------------------------------------------ PerfTest

    /**
     * RabbitMQ's own PerfTest as the drain-shaped ceiling, in its own JVM: the same N persistent messages of the
     * same size, with confirms, into the same durable queue with no consumer. Its rate is its own "sending rate
     * avg"; the queue depth is checked to hold N afterwards.
     */
    Drain perfTest(Path classpathFile, int producers, int confirmWindow) throws Exception {
        return perfTest(classpathFile, producers, confirmWindow, false);
    }

    /**
     * Like {@link #perfTest(Path, int, int)}; {@code relayShaped}: each message also carries what the relay's do (a
     * message id, a content type and the relay's five headers, published with {@code mandatory}), so the broker's
     * cost per message is the relay's. Header values are strings here, the relay's are numbers: the same count and
     * about the same size.
     */
    Drain perfTest(Path classpathFile, int producers, int confirmWindow, boolean relayShaped) throws Exception {
        List<String> extra = List.of();
        if (relayShaped) {
            extra = new ArrayList<>(List.of("--flag", "mandatory"));
            extra.addAll(messageProperties(relayShapeProperties(System.currentTimeMillis())));
        }
        return perfTest(
                classpathFile,
                producers,
                confirmWindow,
                relayShaped ? "RabbitMQ PerfTest, relay-shaped messages" : "RabbitMQ PerfTest",
                producers + " producers, confirm window " + confirmWindow
                        + (relayShaped ? ", message id + 5 headers, mandatory" : ""),
                extra);
    }

    /**
     * The properties of a message of the relay's full shape, as PerfTest's {@code --message-properties} entries: a
     * message id, a content type, priority 0 and the relay's five headers.
     */
    static List<String> relayShapeProperties(long due) {
        return List.of(
                "messageId=3f2c9a4e-1b7d-4c0e-9a51-6d8e2f1b7c30",
                "contentType=application/octet-stream",
                "priority=0",
                RelayHeaders.BUSINESS + "=perftest",
                RelayHeaders.DUE_AT + "=" + due,
                RelayHeaders.RELAYED_AT + "=" + due,
                RelayHeaders.SHARD + "=0",
                RelayHeaders.ATTEMPT + "=1");
    }

    /** PerfTest's arguments for messages with these properties (none: no arguments). */
    static List<String> messageProperties(List<String> properties) {
        return properties.isEmpty() ? List.of() : List.of("--message-properties", String.join(",", properties));
    }

    /**
     * PerfTest as in {@link #perfTest(Path, int, int)}, with {@code extra} arguments (e.g. {@code --flag mandatory},
     * {@code --message-properties ...}) and the given label and settings in the report.
     */
    Drain perfTest(
            Path classpathFile, int producers, int confirmWindow, String label, String settings, List<String> extra)
            throws Exception {
        int n = config.drainMessages();
        log("%s: %d producers, %d unconfirmed max, %,d messages %s", label, producers, confirmWindow, n, extra);
        infra.purge(queue);
        try {
            String classpath = Files.readString(classpathFile).trim();
            List<String> command = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx512m",
                    "-cp",
                    classpath,
                    "com.rabbitmq.perf.PerfTest",
                    "--uri",
                    "amqp://guest:guest@" + config.rabbitHost() + ":" + config.rabbitPort(),
                    "--producers",
                    Integer.toString(producers),
                    "--consumers",
                    "0",
                    "--pmessages",
                    Integer.toString(n / producers),
                    "--size",
                    Integer.toString(config.messageBytes()),
                    "--flag",
                    "persistent",
                    "--confirm",
                    Integer.toString(confirmWindow),
                    "--exchange",
                    exchange,
                    "--type",
                    "direct",
                    "--routing-key",
                    "due",
                    "--queue",
                    queue,
                    "--predeclared",
                    "--skip-binding-queues",
                    "--auto-delete",
                    "false",
                    "--time",
                    "300"));
            command.addAll(extra);
            Process process =
                    new ProcessBuilder(command).redirectErrorStream(true).start();
            StringBuilder output = new StringBuilder();
            Thread reader = new Thread(
                    () -> {
                        try {
                            output.append(new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
                        } catch (IOException e) {
                            output.append(e);
                        }
                    },
                    "perf-test-output");
            reader.start();
            // CPU window: from the first message in the queue until it holds N (PerfTest's JVM start-up excluded)
            long pid = process.pid();
            ProcessCpu.Snapshot p0 = null;
            ProcessCpu.Snapshot p1 = null;
            long cpu0 = 0;
            long cpu1 = 0;
            long depth0 = 0;
            long polled = 0;
            while (process.isAlive() && polled < n) {
                polled = infra.depth(queue);
                if (p0 == null && polled > 0) {
                    p0 = ProcessCpu.Snapshot.take(pid);
                    cpu0 = processCpuNanos();
                    depth0 = polled;
                } else if (p0 != null && polled >= n) {
                    p1 = ProcessCpu.Snapshot.take(pid);
                    cpu1 = processCpuNanos();
                }
                Thread.sleep(5);
            }
            int exit = process.waitFor();
            reader.join();
            Matcher m = Pattern.compile("sending rate avg: ([0-9]+)").matcher(output);
            if (exit != 0 || !m.find()) {
                throw new IllegalStateException("PerfTest failed (exit " + exit + "):\n" + output);
            }
            double rate = Double.parseDouble(m.group(1));
            long depth = infra.depth(queue);
            long[] cpu = p0 != null && p1 != null && polled > depth0 ? p1.since(p0) : new long[] {-1, -1};
            double scale = p0 != null && p1 != null && polled > depth0 ? (double) depth / (polled - depth0) : 0;
            Drain d = new Drain(
                    label,
                    settings,
                    "all at once",
                    n,
                    depth,
                    Math.round(depth * 1000.0 / rate),
                    depth < n,
                    new RedisStats.Delta(0, 0, 0, 0),
                    0,
                    false,
                    0,
                    scale == 0 ? -1 : Math.round((cpu1 - cpu0) * scale),
                    cpu[0] < 0 ? -1 : Math.round(cpu[0] * scale),
                    cpu[1] < 0 ? -1 : Math.round(cpu[1] * scale),
                    -1);
            log("  %,.0f msg/s (queue holds %,d)", rate, depth);
            return d;
        } finally {
            infra.purge(queue);
        }
    }

    static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getProcessCpuTime() : 0;
    }

    private static void sleepUntil(long epochMs) throws InterruptedException {
        long wait = epochMs - System.currentTimeMillis();
        if (wait > 0) {
            Thread.sleep(wait);
        }
    }
}
