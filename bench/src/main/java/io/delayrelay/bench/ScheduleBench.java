package io.delayrelay.bench;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;

/**
 * Recurring schedules (issue 42) through the relay's exec jar, three instances, declared as relay.schedules.* as users
 * declare them. Fire lag: 20 schedules every 1 s for 60 s; per slot message x-delay-relayed-at − x-delay-slot (the
 * pop, i.e. the publish) and receive − slot, early, duplicates and missing slots. Idle cost: 10,000 schedules every
 * 1 min across 10 businesses; Redis commands/s (INFO commandstats) of the fleet with them and of the same fleet with
 * none, measured the same way.
 */
final class ScheduleBench {

    static final int INSTANCES = 3;
    static final int LAG_SCHEDULES = 20;
    // -Dbench.schedules.* (BENCH_JAVA_OPTS) shorten a trial of the harness itself; the reports use the defaults
    static final int LAG_SECONDS = Integer.getInteger("bench.schedules.lag-seconds", 60);
    static final int IDLE_SCHEDULES = Integer.getInteger("bench.schedules.idle-schedules", 10_000);
    static final int IDLE_BUSINESSES = 10;
    static final int WARM_UP_SECONDS = Integer.getInteger("bench.schedules.warm-up-seconds", 70);
    static final int BASELINE_WARM_UP_SECONDS = 15;
    /** When the slot entries in shard 0 are counted: this long before the minute boundary in the window. */
    static final long[] AHEAD_MS = {4_000, 2_000, 100};

    static final int MEASURE_SECONDS = Integer.getInteger("bench.schedules.measure-seconds", 60);

    /** Fire lag of the schedules every 1 s. */
    record Lag(
            int schedules,
            int seconds,
            int expected,
            int received,
            int duplicates,
            int missing,
            long[] publishMs,
            long[] receiveMs,
            long earlyPublished,
            long earlyReceived,
            long startupMs,
            String loadAverage) {}

    /** Redis commands of one idle fleet over the measured window. */
    record Idle(
            int schedules,
            double seconds,
            double commandsPerSecond,
            double evalshaPerSecond,
            Map<String, Double> byName,
            long startupMs,
            int slotMessages,
            int expectedSlotMessages,
            long[] burstPublishMs,
            int burstOnTime,
            long[] writtenAhead) {}

    record Result(Lag lag, Idle with, Idle without, String loadAverage) {}

    private final Infra infra;
    private final Path relayJar;
    private final Path logs;

    ScheduleBench(Infra infra, Path relayJar, Path logs) {
        this.infra = infra;
        this.relayJar = relayJar;
        this.logs = logs;
    }

    static double estimateSeconds() {
        return (40 + LAG_SECONDS + 5)
                + (60 + WARM_UP_SECONDS + MEASURE_SECONDS)
                + (40 + BASELINE_WARM_UP_SECONDS + MEASURE_SECONDS);
    }

    Result run() throws Exception {
        if (relayJar == null || !Files.isRegularFile(relayJar)) {
            throw new IllegalStateException("no relay exec jar: " + relayJar + " (bench.sh builds and passes it)");
        }
        Files.createDirectories(logs);
        Lag lag = lag();
        Idle with = idle(IDLE_SCHEDULES, WARM_UP_SECONDS);
        Idle without = idle(0, BASELINE_WARM_UP_SECONDS);
        return new Result(lag, with, without, Storm.loadAverage());
    }

    // ------------------------------------------------------------------------------------------------ fire lag

    private Lag lag() throws Exception {
        String business = infra.name("sched");
        String exchange = business + "-x";
        String queue = business + "-q";
        Channel admin = infra.channel();
        admin.exchangeDeclare(exchange, "topic", false, true, null);
        admin.queueDeclare(queue, false, false, true, null);
        admin.queueBind(queue, exchange, "#");
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("relay.businesses." + business + ".exchange", exchange);
        p.put("relay.businesses." + business + ".routing-key", "due");
        for (int i = 0; i < LAG_SCHEDULES; i++) {
            String at = "relay.schedules." + business + "-s" + i + ".";
            p.put(at + "business", business);
            p.put(at + "every", "1s");
            p.put(at + "payload", "s" + i);
        }
        // every message: id, slot, relayed-at, received
        ConcurrentLinkedQueue<Object[]> got = new ConcurrentLinkedQueue<>();
        Connection connection = infra.amqpFactory().newConnection("relay-bench-schedules");
        List<Process> fleet = new ArrayList<>();
        try {
            Channel consumer = connection.createChannel();
            consumer.basicConsume(queue, true, new DefaultConsumer(consumer) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    long now = System.currentTimeMillis();
                    Map<String, Object> h = props.getHeaders();
                    got.add(new Object[] {
                        props.getMessageId(), number(h, RelayHeaders.SLOT), number(h, RelayHeaders.RELAYED_AT), now
                    });
                }
            });
            Scenarios.log(
                    "schedules: %d instances, %d schedules every 1 s, %d s", INSTANCES, LAG_SCHEDULES, LAG_SECONDS);
            long startup = startFleet(fleet, p, "sched-lag");
            long w0 = (System.currentTimeMillis() / 1000 + 5) * 1000; // the slots from 5 s after all started
            long w1 = w0 + LAG_SECONDS * 1000L;
            Thread.sleep(Math.max(0, w1 - System.currentTimeMillis()) + 3_000);
            Map<String, Integer> copies = new HashMap<>();
            List<Long> publish = new ArrayList<>();
            List<Long> receive = new ArrayList<>();
            long earlyPublished = 0;
            long earlyReceived = 0;
            for (Object[] m : got) {
                long slot = (Long) m[1];
                if (slot < w0 || slot >= w1) {
                    continue;
                }
                copies.merge((String) m[0], 1, Integer::sum);
                long relayed = (Long) m[2];
                long received = (Long) m[3];
                publish.add(relayed - slot);
                receive.add(received - slot);
                earlyPublished += relayed < slot ? 1 : 0;
                earlyReceived += received < slot ? 1 : 0;
            }
            int expected = LAG_SCHEDULES * LAG_SECONDS;
            int duplicates = copies.values().stream().mapToInt(c -> c - 1).sum();
            int distinct = copies.size();
            Lag lag = new Lag(
                    LAG_SCHEDULES,
                    LAG_SECONDS,
                    expected,
                    distinct,
                    duplicates,
                    Math.max(0, expected - distinct),
                    percentiles(publish),
                    percentiles(receive),
                    earlyPublished,
                    earlyReceived,
                    startup,
                    Storm.loadAverage());
            Scenarios.log(
                    "  %,d of %,d slots (duplicates %d), relayed-at - slot p50/p99/max %s ms, received - slot %s ms,"
                            + " early %d/%d",
                    distinct,
                    expected,
                    duplicates,
                    Arrays.toString(lag.publishMs()),
                    Arrays.toString(lag.receiveMs()),
                    earlyPublished,
                    earlyReceived);
            return lag;
        } finally {
            stopFleet(fleet);
            connection.close();
            admin.queueDelete(queue);
            admin.exchangeDelete(exchange);
            infra.deleteRunKeys();
        }
    }

    // ------------------------------------------------------------------------------------------------ idle cost

    private Idle idle(int schedules, int warmUpSeconds) throws Exception {
        String exchange = infra.name("sched-idle-x");
        String queue = infra.name("sched-idle-q");
        Channel admin = infra.channel();
        admin.exchangeDeclare(exchange, "topic", false, true, null);
        admin.queueDeclare(queue, false, false, true, null);
        admin.queueBind(queue, exchange, "#");
        List<String> businesses = new ArrayList<>();
        StringBuilder file = new StringBuilder();
        for (int b = 0; b < IDLE_BUSINESSES; b++) {
            String business = infra.name("sidle");
            businesses.add(business);
            file.append("relay.businesses.")
                    .append(business)
                    .append(".exchange=")
                    .append(exchange)
                    .append('\n');
            file.append("relay.businesses.").append(business).append(".routing-key=due\n");
        }
        for (int i = 0; i < schedules; i++) {
            String at = "relay.schedules.s" + i + ".";
            file.append(at)
                    .append("business=")
                    .append(businesses.get(i % IDLE_BUSINESSES))
                    .append('\n');
            file.append(at).append("every=1m\n");
            file.append(at).append("payload=s").append(i).append('\n');
        }
        // 30,000 lines: a properties file (spring.config.additional-location), not the command line
        Path properties = logs.resolve("schedules-idle-" + schedules + ".properties");
        Files.writeString(properties, file, StandardCharsets.UTF_8);
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.config.additional-location", "file:" + properties.toAbsolutePath());
        ConcurrentLinkedQueue<long[]> got = new ConcurrentLinkedQueue<>();
        Connection connection = infra.amqpFactory().newConnection("relay-bench-schedules-idle");
        List<Process> fleet = new ArrayList<>();
        try {
            Channel consumer = connection.createChannel();
            consumer.basicConsume(queue, true, new DefaultConsumer(consumer) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    Map<String, Object> h = props.getHeaders();
                    got.add(new long[] {number(h, RelayHeaders.SLOT), number(h, RelayHeaders.RELAYED_AT)});
                }
            });
            Scenarios.log(
                    "schedules idle: %d instances, %,d schedules every 1 min over %d businesses: warm-up %d s, %d s"
                            + " measured",
                    INSTANCES, schedules, IDLE_BUSINESSES, warmUpSeconds, MEASURE_SECONDS);
            long startup = startFleet(fleet, p, "sched-idle-" + schedules);
            Thread.sleep(warmUpSeconds * 1000L);
            RedisStats s0 = infra.stats();
            long t0 = System.nanoTime();
            long w0 = System.currentTimeMillis();
            long end = w0 + MEASURE_SECONDS * 1000L;
            // where the minute's tends stand: the slot entries in the businesses' shard 0 (ZCARD, nothing else is
            // there) at 4 s, 2 s and 0.1 s before the minute boundary in the window; the bench's ZCARD calls are
            // taken out of the counts below
            long boundary = (w0 / 60_000 + 1) * 60_000;
            long[] written = {-1, -1, -1};
            int own = 0;
            for (int k = 0; k < AHEAD_MS.length && schedules > 0; k++) {
                long at = boundary - AHEAD_MS[k];
                if (at <= w0 || at >= end) {
                    continue;
                }
                sleepUntil(at);
                long sum = 0;
                for (String business : businesses) {
                    sum += infra.redis()
                            .zcard(DelayQueueKeys.bytes(
                                    DelayQueueKeys.forBusiness(business).shard(0)));
                }
                own += businesses.size();
                written[k] = sum;
            }
            sleepUntil(end);
            RedisStats s1 = infra.stats();
            long w1 = System.currentTimeMillis();
            double secs = (System.nanoTime() - t0) / 1e9;
            for (Process relay : fleet) {
                if (!relay.isAlive()) {
                    throw new IllegalStateException("a relay exited during the measurement; see " + logs);
                }
            }
            RedisStats d = s1.minusCalls(s0);
            d.calls().merge("zcard", (long) -own, Long::sum);
            Map<String, Double> byName = new LinkedHashMap<>();
            d.calls().entrySet().stream()
                    .filter(e -> !e.getKey().equals("info") && e.getValue() > 0)
                    .sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
                    .forEach(e -> byName.put(e.getKey(), e.getValue() / secs));
            // the slot messages of the minute boundaries inside the window (slot in [w0, w1)): one per schedule each
            Thread.sleep(2_000);
            long boundaries = (w1 - 1) / 60_000 - (w0 - 1) / 60_000;
            List<Long> burst = new ArrayList<>();
            int inWindow = 0;
            int onTime = 0;
            for (long[] m : got) {
                if (m[0] >= w0 && m[0] < w1) {
                    inWindow++;
                    burst.add(m[1] - m[0]);
                    onTime += m[1] - m[0] <= 50 ? 1 : 0;
                }
            }
            Idle idle = new Idle(
                    schedules,
                    secs,
                    (d.totalCalls() - own) / secs,
                    d.calls().getOrDefault("evalsha", 0L) / secs,
                    byName,
                    startup,
                    inWindow,
                    (int) (boundaries * schedules),
                    percentiles(burst),
                    onTime,
                    written);
            Scenarios.log(
                    "  %,.1f commands/s (%,.1f EVALSHA/s), %,d slot messages of %,d expected: %s",
                    idle.commandsPerSecond(), idle.evalshaPerSecond(), inWindow, idle.expectedSlotMessages(), byName);
            return idle;
        } finally {
            stopFleet(fleet);
            connection.close();
            admin.queueDelete(queue);
            admin.exchangeDelete(exchange);
            infra.deleteRunKeys();
        }
    }

    // ------------------------------------------------------------------------------------------------ fleet

    /** Starts the exec jar INSTANCES times with these properties; returns ms until all logged "delay-relay started". */
    private long startFleet(List<Process> fleet, Map<String, Object> properties, String label) throws Exception {
        long start = System.currentTimeMillis();
        List<Path> logFiles = new ArrayList<>();
        for (int i = 1; i <= INSTANCES; i++) {
            Map<String, Object> p = new LinkedHashMap<>(properties);
            p.put("relay.fleet.instance-id", label + "-" + i);
            Path log = logs.resolve("schedules-" + label + "-" + i + ".log");
            logFiles.add(log);
            fleet.add(Storm.startRelayJar(infra, relayJar, p, log));
        }
        for (int i = 0; i < INSTANCES; i++) {
            LagProcesses.awaitLogLine(fleet.get(i), logFiles.get(i), "delay-relay started", 240);
        }
        long ms = System.currentTimeMillis() - start;
        Scenarios.log("  %d instances started in %,d ms", INSTANCES, ms);
        return ms;
    }

    private static void stopFleet(List<Process> fleet) throws InterruptedException {
        for (Process p : fleet) {
            p.destroy();
        }
        for (Process p : fleet) {
            if (!p.waitFor(40, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private static void sleepUntil(long epochMs) throws InterruptedException {
        long wait = epochMs - System.currentTimeMillis();
        if (wait > 0) {
            Thread.sleep(wait);
        }
    }

    private static long number(Map<String, Object> headers, String name) {
        Object v = headers == null ? null : headers.get(name);
        return v instanceof Number n ? n.longValue() : -1;
    }

    /** p50, p99, max of the values (-1 each when there are none). */
    private static long[] percentiles(List<Long> values) {
        long[] sorted = values.stream().mapToLong(Long::longValue).sorted().toArray();
        return new long[] {
            Scenarios.pct(sorted, 0.50),
            Scenarios.pct(sorted, 0.99),
            sorted.length == 0 ? -1 : sorted[sorted.length - 1]
        };
    }

    // ------------------------------------------------------------------------------------------------ report

    /** The schedules' share of the idle fleet's commands/s: with them minus without. */
    static double added(Result r) {
        return r.with().commandsPerSecond() - r.without().commandsPerSecond();
    }

    static void render(StringBuilder b, Result r) {
        if (r == null) {
            return;
        }
        b.append("## 9. Recurring schedules\n\n");
        b.append(String.format(
                Locale.ROOT,
                "The relay's exec jar, %d instances, on the private Redis, schedules declared as relay.schedules.*"
                        + " (issue 42). Load average after: %s.%n%n",
                INSTANCES,
                r.loadAverage()));
        Lag l = r.lag();
        if (l != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "Fire lag: one business, %d schedules `every: 1s`, the slots of %d s (from 5 s after the %d instances"
                            + " started, in %,d ms). Published = x-delay-relayed-at − x-delay-slot (the pop, in Redis"
                            + " time); received = the harness's receive instant − slot (the broker hop included)."
                            + " Duplicates: a message id `<schedule>@<slot>` seen again; missing: a slot never"
                            + " received.%n%n",
                    l.schedules(),
                    l.seconds(),
                    INSTANCES,
                    l.startupMs()));
            b.append("| figure | measured | target |\n|---|---:|---:|\n");
            b.append(String.format(
                    Locale.ROOT,
                    "| slot → published (relayed-at − slot) p50 / p99 / max, ms | %d / **%d** / %d | p99 ≤ 50 |%n",
                    l.publishMs()[0],
                    l.publishMs()[1],
                    l.publishMs()[2]));
            b.append(String.format(
                    Locale.ROOT,
                    "| slot → received p50 / p99 / max, ms | %d / %d / %d | |%n",
                    l.receiveMs()[0],
                    l.receiveMs()[1],
                    l.receiveMs()[2]));
            b.append(String.format(
                    Locale.ROOT,
                    "| early (relayed-at < slot / received < slot) | %d / %d | 0 |%n",
                    l.earlyPublished(),
                    l.earlyReceived()));
            b.append(String.format(
                    Locale.ROOT,
                    "| slots received / expected (duplicates, missing) | %,d / %,d (%d, %d) | all, exactly once |%n%n",
                    l.received(),
                    l.expected(),
                    l.duplicates(),
                    l.missing()));
        }
        Idle w = r.with();
        Idle wo = r.without();
        if (w != null && wo != null) {
            double added = added(r);
            b.append(String.format(
                    Locale.ROOT,
                    "Idle cost: %d businesses (relay defaults, keyspace notifications on), %,d schedules `every: 1m`"
                            + " spread over them; %d s warm-up (every schedule has written its first slot), then"
                            + " INFO commandstats deltas over %d s (the bench's INFO calls excluded; Redis counts the"
                            + " commands a script runs as well as the EVALSHA). The same fleet with no schedule after"
                            + " %d s, measured the same way. Fleet start-up (all %d logged started): %,d ms with"
                            + " %,d schedules, %,d ms without.%n%n",
                    IDLE_BUSINESSES,
                    w.schedules(),
                    WARM_UP_SECONDS,
                    MEASURE_SECONDS,
                    BASELINE_WARM_UP_SECONDS,
                    INSTANCES,
                    w.startupMs(),
                    w.schedules(),
                    wo.startupMs()));
            b.append("| figure | measured | target |\n|---|---:|---:|\n");
            b.append(String.format(
                    Locale.ROOT,
                    "| fleet with %,d schedules, commands/s (EVALSHA/s) | %,.1f (%,.1f) | |%n",
                    w.schedules(),
                    w.commandsPerSecond(),
                    w.evalshaPerSecond()));
            b.append(String.format(
                    Locale.ROOT,
                    "| same fleet, no schedule, commands/s (EVALSHA/s) | %,.1f (%,.1f) | |%n",
                    wo.commandsPerSecond(),
                    wo.evalshaPerSecond()));
            b.append(String.format(
                    Locale.ROOT, "| commands/s the schedules add (with − without) | **%,.1f** | ≤ 200 |%n", added));
            b.append(String.format(
                    Locale.ROOT,
                    "| commands/s per schedule: fleet total / %,d (the schedules' share / %,d) | %.3f (%.3f) | ≤ 1 |%n",
                    w.schedules(),
                    w.schedules(),
                    w.commandsPerSecond() / w.schedules(),
                    added / w.schedules()));
            b.append(String.format(
                    Locale.ROOT,
                    "| slot messages in the window / expected (slot → published p50 / p99 / max of that burst, ms) |"
                            + " %,d / %,d (%d / %d / %d) | |%n",
                    w.slotMessages(),
                    w.expectedSlotMessages(),
                    w.burstPublishMs()[0],
                    w.burstPublishMs()[1],
                    w.burstPublishMs()[2]));
            b.append(String.format(
                    Locale.ROOT, "| of them published ≤ 50 ms after their slot | %,d | |%n", w.burstOnTime()));
            b.append(String.format(
                    Locale.ROOT,
                    "| slot entries written (in shard 0) 4 s / 2 s / 0.1 s before that minute's slot (−1: not"
                            + " sampled) | %,d / %,d / %,d of %,d | |%n%n",
                    w.writtenAhead()[0],
                    w.writtenAhead()[1],
                    w.writtenAhead()[2],
                    w.schedules()));
            if (w.slotMessages() > 0) {
                b.append(String.format(
                        Locale.ROOT,
                        "Per slot fired in the window (each schedule of 1 min is tended once and fires once a"
                                + " minute): %.1f commands added (%.1f EVALSHA), i.e. (with − without) × %.0f s / %,d"
                                + " slot messages.%n%n",
                        added * w.seconds() / w.slotMessages(),
                        (w.evalshaPerSecond() - wo.evalshaPerSecond()) * w.seconds() / w.slotMessages(),
                        w.seconds(),
                        w.slotMessages()));
            }
            b.append("Commands/s by name (INFO commandstats), with and without the schedules:\n\n");
            b.append("| command | with schedules | without | added |\n|---|---:|---:|---:|\n");
            java.util.Set<String> names =
                    new java.util.LinkedHashSet<>(w.byName().keySet());
            names.addAll(wo.byName().keySet());
            for (String name : names) {
                double a = w.byName().getOrDefault(name, 0.0);
                double c = wo.byName().getOrDefault(name, 0.0);
                b.append(String.format(Locale.ROOT, "| %s | %,.1f | %,.1f | %,.1f |%n", name, a, c, a - c));
            }
            b.append('\n');
        }
    }
}
