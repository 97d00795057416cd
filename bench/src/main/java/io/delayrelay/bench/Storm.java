package io.delayrelay.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;

/**
 * The midnight storm (issue 26): N entries of one business due in the same second, drained by the relay as it runs
 * in production, the shipped exec jar in its own JVM, without a cap and with {@code max-rate}. A consumer
 * in the harness JVM reads every message as it arrives (a storm lands on consumers, not on a queue nobody reads),
 * so lateness is measured per message: receive − due, and publish (the relay's {@code x-delay-relayed-at}) − due.
 *
 * <p>Why the exec jar and not the in-process relay of the drain scenario: the storm is the operator's case, and the
 * figures an operator sees are the daemon's (its own JVM, its own heap and GC, its own CPU apart from the harness's
 * consumer of 500,000 messages). One relay JVM serves every run: three businesses, the uncapped one first (after an
 * unreported warm-up storm of {@link #WARM_UP} entries, as a relay that has run all day is warm at midnight), then
 * the capped one at defaults (2 threads), then the same cap with {@link #CAPPED_THREADS} threads: a capped worker
 * pops a fiftieth of a second's worth per round trip, so on a busy host its round trips may bound the capped rate.
 */
final class Storm {

    /** The storm: RocketMQ's maintainers report "maybe only 20,000" of 500,000 on time (apache/rocketmq#6566). */
    static final int DEFAULT_ENTRIES = 500_000;

    /**
     * The cap of the capped run, messages/s. Chosen as a consumer fleet's capacity, the thing the cap protects: below
     * what this box's broker takes uncapped (~7-10k/s with confirms and a durable queue), so the cap binds and the
     * figure shows the governor, not the broker; high enough that 500,000 drain in 100 s, the kind of delay a
     * "cancel unpaid order" can afford.
     */
    static final int CAP = 5_000;

    static final int WARM_UP = 20_000;

    /** Threads of the third run's business (the default is 2). */
    static final int CAPPED_THREADS = 4;

    /** The entries fall due spread evenly over one second. */
    static final long SPREAD_MS = 1_000;

    /** One storm's figures. {@code maxRate} 0 = uncapped; lateness arrays are {p50, p99, max} in ms. */
    record Result(
            String label,
            int maxRate,
            int n,
            int received,
            int duplicates,
            long loadMs,
            long drainMs,
            double rate,
            double middleRate,
            long[] receiveLate,
            long[] publishLate,
            int onTimeWithin1s,
            long early,
            long brokerRssBeforeBytes,
            long brokerRssPeakBytes,
            long queuePeak,
            long redisMemoryDeltaBytes,
            String loadAverage) {}

    private final Infra infra;
    private final BenchConfig config;
    private final Path relayJar;
    private final Path logs;
    private final int entries;

    Storm(Infra infra, Path relayJar, Path logs, int entries) {
        this.infra = infra;
        this.config = infra.config;
        this.relayJar = relayJar;
        this.logs = logs;
        this.entries = entries;
    }

    int entries() {
        return entries;
    }

    /** Rough duration: relay start, warm-up, two loads (~60k/s), the uncapped drain (~8k/s) and the capped one. */
    static double estimateSeconds(int entries) {
        return 30
                + WARM_UP / 5_000.0
                + 3 * (entries / 60_000.0 * 1.5 + 3)
                + entries / 8_000.0
                + 2 * entries / (double) CAP;
    }

    /** Runs the warm-up, the uncapped storm and the capped ones; returns {uncapped, capped, capped 4 threads}. */
    List<Result> run() throws Exception {
        if (relayJar == null || !Files.isRegularFile(relayJar)) {
            throw new IllegalStateException("no relay exec jar: " + relayJar + " (bench.sh builds and passes it)");
        }
        Files.createDirectories(logs);
        String[] xq = infra.exchangeAndQueue("storm");
        String exchange = xq[0];
        String queue = xq[1];
        String free = infra.name("storm");
        String capped = infra.name("storm-capped");
        String cappedThreads = infra.name("storm-capped-threads");
        Path relayLog = logs.resolve("storm-relay.log");
        Process relay = startRelay(
                Map.of(free, new int[] {0, 0}, capped, new int[] {CAP, 0}, cappedThreads, new int[] {CAP, CAPPED_THREADS
                }),
                exchange,
                relayLog);
        List<Result> results = new ArrayList<>();
        try {
            LagProcesses.awaitLogLine(relay, relayLog, "delay-relay started", 120);
            Scenarios.log("storm: warm-up of %,d entries (not reported)", WARM_UP);
            storm("warm-up", free, 0, WARM_UP, queue, relay);
            results.add(storm("relay, no cap", free, 0, entries, queue, relay));
            String cap = "relay, max-rate " + String.format(Locale.ROOT, "%,d", CAP);
            results.add(storm(cap, capped, CAP, entries, queue, relay));
            results.add(storm(cap + ", " + CAPPED_THREADS + " threads", cappedThreads, CAP, entries, queue, relay));
            return results;
        } finally {
            if (relay.isAlive()) {
                relay.destroy(); // SIGTERM: a graceful stop
                if (!relay.waitFor(40, TimeUnit.SECONDS)) {
                    relay.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
            infra.purge(queue);
            infra.deleteRunKeys();
        }
    }

    private Result storm(String label, String business, int maxRate, int n, String queue, Process relay)
            throws Exception {
        Scenarios.log("storm: %s, %,d entries of one business due in the same second", label, n);
        infra.purge(queue);
        // by the message's sequence number: its first arrival; later ones count as duplicates
        long[] receivedAt = new long[n];
        long[] due = new long[n];
        long[] relayedAt = new long[n];
        AtomicInteger received = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        AtomicInteger strays = new AtomicInteger();
        // due after the predicted end of loading (~60k entries/s on this box, with a margin)
        long t = System.currentTimeMillis() + (long) (n / 60_000.0 * 1_500) + 2_000;
        Connection connection = infra.amqpFactory().newConnection("relay-bench-storm-consumer");
        BrokerSampler broker = new BrokerSampler(connection.createChannel(), queue);
        try {
            Channel channel = connection.createChannel();
            channel.basicConsume(queue, true, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    long now = System.currentTimeMillis();
                    long dueMs = Messages.dueOf(body);
                    long seq = Messages.seqOf(body);
                    if (dueMs < t || dueMs >= t + SPREAD_MS || seq >= n) {
                        strays.incrementAndGet(); // not this storm's (a late copy from an earlier one)
                        return;
                    }
                    int i = (int) seq;
                    if (receivedAt[i] != 0) {
                        duplicates.incrementAndGet();
                        return;
                    }
                    receivedAt[i] = now;
                    due[i] = dueMs;
                    Object r = props.getHeaders() == null
                            ? null
                            : props.getHeaders().get(RelayHeaders.RELAYED_AT);
                    relayedAt[i] = r instanceof Number num ? num.longValue() : -1;
                    received.incrementAndGet();
                }
            });
            long brokerBefore = BrokerSampler.brokerRss();
            broker.start();
            long memory0 = infra.stats().usedMemory();
            long[] dues = Messages.dues(n, t, SPREAD_MS);
            long loadMs = infra.loadShards(
                    DelayQueueKeys.forBusiness(business),
                    config.shards(),
                    Messages.bodies(dues, config.messageBytes(), 0),
                    dues);
            long memoryDelta = infra.stats().usedMemory() - memory0;
            if (System.currentTimeMillis() > t) {
                Scenarios.log(
                        "  warning: loading ended %d ms after the due second began", System.currentTimeMillis() - t);
            }
            long timeoutMs = maxRate > 0 ? n * 1_000L / maxRate * 2 + 60_000 : 600_000;
            long deadline = t + SPREAD_MS + timeoutMs;
            while (received.get() < n && System.currentTimeMillis() < deadline && relay.isAlive()) {
                Thread.sleep(20);
            }
            Thread.sleep(1_000); // a duplicate would come right after its first copy (a retried confirm)
            broker.stop();
            String load = loadAverage();
            int got = received.get();
            if (got < n) {
                Scenarios.log("  warning: %,d of %,d received (relay alive: %s)", got, n, relay.isAlive());
            }
            long last = 0;
            long[] late = new long[got];
            long[] published = new long[got];
            int joined = 0;
            int onTime = 0;
            long early = 0;
            long[] byArrival = new long[got];
            int k = 0;
            for (int i = 0; i < n; i++) {
                if (receivedAt[i] == 0) {
                    continue; // lost: counted as n - received
                }
                byArrival[k] = receivedAt[i];
                last = Math.max(last, receivedAt[i]);
                late[k] = receivedAt[i] - due[i];
                if (late[k] <= 1_000) {
                    onTime++;
                }
                k++;
                if (relayedAt[i] >= 0) {
                    published[joined++] = relayedAt[i] - due[i];
                    if (relayedAt[i] < due[i]) {
                        early++;
                    }
                }
            }
            Arrays.sort(byArrival);
            Arrays.sort(late);
            long[] pub = Arrays.copyOf(published, joined);
            Arrays.sort(pub);
            long drainMs = got == 0 ? 0 : last - t;
            double rate = drainMs <= 0 ? 0 : got * 1000.0 / drainMs;
            // the rate over the middle 80 % of arrivals: the cap's steady state, without the burst and the tail
            double middle = got < 10
                    ? rate
                    : (0.8 * got)
                            * 1000.0
                            / Math.max(1, byArrival[(int) (got * 0.9) - 1] - byArrival[(int) (got * 0.1)]);
            Result result = new Result(
                    label,
                    maxRate,
                    n,
                    got,
                    duplicates.get(),
                    loadMs,
                    drainMs,
                    rate,
                    middle,
                    new long[] {Scenarios.pct(late, 0.5), Scenarios.pct(late, 0.99), got == 0 ? -1 : late[got - 1]},
                    new long[] {Scenarios.pct(pub, 0.5), Scenarios.pct(pub, 0.99), joined == 0 ? -1 : pub[joined - 1]},
                    onTime,
                    early,
                    brokerBefore,
                    broker.peak(),
                    broker.queuePeak(),
                    memoryDelta,
                    load);
            Scenarios.log(
                    "  %,d of %,d received (duplicates %d, strays %d) in %,d ms from the due second: %,.0f msg/s (middle 80 %%: %,.0f/s); late (receive"
                            + " - due) p50 %d p99 %d max %d ms; publish - due p50 %d p99 %d max %d ms; on time (<= 1 s)"
                            + " %,d; early %d; broker RSS %s -> peak %s; queue peak %,d; Redis +%s; load %s",
                    got,
                    n,
                    duplicates.get(),
                    strays.get(),
                    drainMs,
                    rate,
                    middle,
                    result.receiveLate()[0],
                    result.receiveLate()[1],
                    result.receiveLate()[2],
                    result.publishLate()[0],
                    result.publishLate()[1],
                    result.publishLate()[2],
                    onTime,
                    early,
                    mib(brokerBefore),
                    mib(broker.peak()),
                    broker.queuePeak(),
                    mib(memoryDelta),
                    load);
            return result;
        } finally {
            broker.stop();
            try {
                connection.close();
            } catch (IOException | RuntimeException ignored) {
                // closing anyway
            }
            infra.purge(queue);
        }
    }

    /**
     * The relay's exec jar with the given businesses (name → {max-rate, threads}, 0 = none / default), 16 shards,
     * defaults otherwise.
     */
    private Process startRelay(Map<String, int[]> businesses, String exchange, Path log) throws IOException {
        Map<String, Object> p = new LinkedHashMap<>();
        businesses.forEach((business, settings) -> {
            int maxRate = settings[0];
            String prefix = "relay.businesses." + business + ".";
            p.put(prefix + "exchange", exchange);
            p.put(prefix + "routing-key", "due");
            p.put(prefix + "shards", config.shards());
            if (maxRate > 0) {
                p.put(prefix + "max-rate", maxRate);
            }
            if (settings[1] > 0) {
                p.put(prefix + "threads", settings[1]);
            }
        });
        return startRelayJar(infra, relayJar, p, log);
    }

    /**
     * The relay's exec jar in its own JVM on the bench's Redis and RabbitMQ, with its INFO log (the caller awaits
     * "delay-relay started") and these properties (the businesses).
     */
    static Process startRelayJar(Infra infra, Path relayJar, Map<String, Object> properties, Path log)
            throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m",
                "-jar",
                relayJar.toString()));
        Map<String, Object> p = RelayContender.baseProperties(infra);
        p.remove("logging.level.root"); // keep the relay's INFO log: "delay-relay started" is awaited
        p.put("spring.main.web-application-type", "none");
        p.putAll(properties);
        p.forEach((k, v) -> command.add("--" + k + "=" + v));
        return new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "n/a";
        }
    }

    static String mib(long bytes) {
        return bytes < 0 ? "n/a" : String.format(Locale.ROOT, "%,.0f MiB", bytes / 1048576.0);
    }

    /** Renders the storm section of the report. */
    static void render(StringBuilder b, List<Result> results, List<Scenarios.Drain> perfTests) {
        Scenarios.Drain perfTest = perfTests.stream()
                .max(java.util.Comparator.comparingDouble(Scenarios.Drain::rate))
                .orElse(null);
        if (results.isEmpty()) {
            return;
        }
        Result first = results.get(0);
        b.append(String.format(
                Locale.ROOT, "## 6. Storm: %,d entries of one business due in the same second%n%n", first.n()));
        b.append("The relay's exec jar in its own JVM (16 shards, defaults), a consumer reading every message as it"
                + " arrives. Late = receive − due; publish = the relay's x-delay-relayed-at − due. On time ="
                + " received within 1 s of its due time. Lost = never received (each message is counted once by its"
                + " sequence number; another copy is a duplicate). Broker memory = RSS of beam.smp (what `rabbitmqctl"
                + " status` reports with its rss strategy; the broker is shared with whatever else runs on it),"
                + " sampled every 200 ms with the depth of the storm's queue (messages published, not yet"
                + " delivered to the consumer). Redis memory = used_memory growth from loading the storm.\n\n");
        b.append(
                "| run | received (lost) | duplicates | msg/s | middle 80 % msg/s | × PerfTest | late p50 / p99 / max ms"
                        + " | publish − due p50 / p99 / max ms | on time (≤ 1 s) | early | broker RSS before → peak"
                        + " | queue peak | Redis memory | load avg |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (Result r : results) {
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %,d (%,d) | %,d | %,.0f | %,.0f | %s | %d / %d / %d | %d / %d / %d | %,d (%.1f %%) | %d | %s → %s"
                            + " | %,d | +%s | %s |%n",
                    r.label(),
                    r.received(),
                    r.n() - r.received(),
                    r.duplicates(),
                    r.rate(),
                    r.middleRate(),
                    perfTest == null || perfTest.rate() == 0
                            ? "n/a"
                            : String.format(Locale.ROOT, "%.2fx", r.rate() / perfTest.rate()),
                    r.receiveLate()[0],
                    r.receiveLate()[1],
                    r.receiveLate()[2],
                    r.publishLate()[0],
                    r.publishLate()[1],
                    r.publishLate()[2],
                    r.onTimeWithin1s(),
                    r.n() == 0 ? 0 : 100.0 * r.onTimeWithin1s() / r.n(),
                    r.early(),
                    mib(r.brokerRssBeforeBytes()),
                    mib(r.brokerRssPeakBytes()),
                    r.queuePeak(),
                    mib(r.redisMemoryDeltaBytes()),
                    r.loadAverage()));
        }
        for (int i = 0; i < perfTests.size(); i++) {
            Scenarios.Drain p = perfTests.get(i);
            b.append(String.format(
                    Locale.ROOT,
                    "%sRabbitMQ PerfTest %s the storms (%s, %,d messages, no consumer): %,.0f msg/s%s.%n",
                    i == 0 ? "\n" : "",
                    perfTests.size() == 2 && i == 0 ? "before" : "after",
                    p.settings(),
                    p.n(),
                    p.rate(),
                    p == perfTest && perfTests.size() > 1 ? " (the ceiling for × PerfTest: the higher)" : ""));
        }
        b.append("\nFor context: RocketMQ's maintainers report that of 500,000 timers due in one second \"maybe only"
                + " 20,000\" are delivered on time (apache/rocketmq#6566).\n\n");
    }
}
