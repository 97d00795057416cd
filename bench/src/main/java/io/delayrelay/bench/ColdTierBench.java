package io.delayrelay.bench;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ShardSelector;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The cold tier's figures (issue 27, docs/cold-tier.md), {@code scripts/bench.sh --only cold}:
 *
 * <ul>
 *   <li><b>Sizing and moves</b>: n realistic ~100 B JSON order messages scheduled by id, due in 7-30 days, 16 shards;
 *       Redis bytes per entry hot and once demoted ({@code INFO memory} used_memory deltas); demotion and promotion
 *       by the relay itself, in the harness JVM: started with {@code cold-after: 1d} it demotes every entry, started
 *       again without cold-after it brings every block back (docs/cold-tier.md); both read off its documented
 *       {@code delay.relay.cold.moves} counter, entries/s and the CPU Redis and this JVM spent per entry; cancel and
 *       reschedule of cold entries through relay-api (the contract scripts), p50/p99.
 *   <li><b>Sizing of plain-ZADD members</b>: then the same n messages (the same generator and seed) scheduled the way
 *       the design's main producer path does, {@code ZADD K:i due message} with the message as the member (no payload
 *       hash entry; shard = relay-api's {@link ShardSelector} rule on the member's bytes), in a business of its own
 *       once the by-id entries are deleted and freed; Redis bytes per entry hot and once the relay (cold-after 1 d)
 *       has demoted them, measured as above.
 *   <li><b>Lag of promoted entries</b>: the relay's exec jar (its own JVM) with {@code cold-after: 20s}; entries
 *       written {@link #LAG_AHEAD_MS} ahead, due evenly at {@link #LAG_RATE}/s for {@link #LAG_SECONDS} s, so the
 *       mover demotes them, then brings them back a lead (10 s) before they are due; a consumer reads each one;
 *       lag = the relay's {@code x-delay-relayed-at} − due, early = relayed before due.
 * </ul>
 */
final class ColdTierBench {

    static final int DEFAULT_ENTRIES = 1_000_000;
    static final int SHARDS = 16;
    static final int LAG_RATE = 2_000;
    static final int LAG_SECONDS = 30;
    static final String LAG_COLD_AFTER = "20s";

    /** The sizing run's cold-after: every entry (due in 7-30 days) is past it, so the relay demotes them all. */
    static final String MOVES_COLD_AFTER = "1d";

    /** Documented Micrometer name of the cold tier's moves (docs/operations.md: delay_relay_cold_moves_total). */
    static final String COLD_MOVES = "delay.relay.cold.moves";

    /** A move whose counter stands still this long is over (the drain without cold-after runs every 60 s). */
    static final long MOVE_STALL_MS = 75_000;

    /** Written this far ahead of the first due time: past cold-after (20 s) with time for the demotions. */
    static final long LAG_AHEAD_MS = 45_000;

    /** Hot entries relayed before the measured run, numbered from {@link #WARM_SEQ} (the consumer skips them). */
    static final int WARM_UP = 20_000;

    static final long WARM_SEQ = 10_000_000;

    private static final String[] ACTIONS = {"review", "auto-close", "remind", "renew", "expire", "follow-up"};
    private static final String[] CURRENCIES = {"EUR", "USD", "GBP", "CNY", "JPY"};

    /** Sizing and moves of n entries; byte figures per entry, CPU in µs per entry, latencies {p50, p99} ms. */
    record Moves(
            int n,
            double messageBytes,
            long loadMs,
            double hotBytes,
            double coldBytes,
            long live,
            long blocks,
            long demoted,
            double demoteRate,
            double demoteRedisUs,
            double demoteJvmUs,
            long promoted,
            double promoteRate,
            double promoteRedisUs,
            double promoteJvmUs,
            double[] cancelMs,
            double[] rescheduleMs,
            int ops,
            String loadAverage) {}

    /**
     * Sizing of n plain-ZADD members (the message is the member, no payload hash entry): byte figures per entry, the
     * relay's demotion of them as in {@link Moves}.
     */
    record Plain(
            int n,
            double messageBytes,
            long loadMs,
            double hotBytes,
            double coldBytes,
            long live,
            long blocks,
            long demoted,
            long demoteMs,
            double demoteRate,
            String loadAverage) {}

    /** The lag run: entries, the most seen cold at once, arrivals; lag {p50, p99, max} ms. */
    record Lag(int n, long coldPeak, int received, int duplicates, long early, long[] lagMs, String loadAverage) {}

    /** Unreported calls of cancel and of reschedule before the measured ones (the producer's JIT warm-up). */
    static final int WARM_CALLS = 2_000;

    private final Infra infra;
    private final Path relayJar;
    private final Path logs;
    private final int entries;

    ColdTierBench(Infra infra, Path relayJar, Path logs, int entries) {
        this.infra = infra;
        this.relayJar = relayJar;
        this.logs = logs;
        this.entries = entries;
    }

    /**
     * Rough duration: loading (~50k/s), the moves (~10k/s each way on a busy box), the plain-ZADD members' loading and
     * demotion (~20k/s, and a relay's start), the lag run (~2 min).
     */
    static double estimateSeconds(int entries) {
        return entries / 50_000.0 + 2 * entries / 10_000.0 + 150 + entries / 50_000.0 + entries / 20_000.0 + 20;
    }

    Moves moves() throws Exception {
        String business = infra.name("cold");
        String[] xq = infra.exchangeAndQueue("cold");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(infra.config.redisHost(), infra.config.redisPort()));
        factory.afterPropertiesSet();
        factory.start();
        try {
            RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(factory);
            long base = infra.stats().usedMemory();
            Scenarios.log("cold: loading %,d entries by id due in 7-30 days", entries);
            long t0 = System.nanoTime();
            long messageBytes = load(keys, true);
            long loadMs = (System.nanoTime() - t0) / 1_000_000;
            double hot = (infra.stats().usedMemory() - base) / (double) entries;
            Scenarios.log("  loaded in %,d ms; hot %.1f B/entry", loadMs, hot);

            // demotion: the relay itself (in-process, cold-after 1 d) demotes every entry; the move is read off its
            // delay.relay.cold.moves counter
            Moved demote;
            try (ConfigurableApplicationContext relay = startInProcess(business, xq[0], MOVES_COLD_AFTER)) {
                demote = awaitMoves(relay, business, entries, "demoted");
            }
            long demoted = demote.total();
            double cold = (infra.stats().usedMemory() - base) / (double) entries;
            ColdCount.Count counted = ColdCount.of(producer, factory, business, SHARDS, true);
            long live = counted.entries();
            long blocks = counted.blocks();
            Scenarios.log(
                    "  demoted %,d in %,d ms: %,.0f/s (Redis %.1f µs, JVM %.1f µs CPU an entry; %s); cold %.1f"
                            + " B/entry, %,d live in %,d blocks",
                    demoted,
                    demote.step().wallMs,
                    demote.rate(),
                    demote.redisUs(),
                    demote.jvmUs(),
                    demote.step().ping(),
                    cold,
                    live,
                    blocks);

            Random r = new Random(7);
            int ops = Math.min(10_000, entries / 4);
            // warm-up (not reported): the producer's cancel and reschedule paths compiled, as in a producer that has
            // run all day; ids never scheduled, so the same scripts run (cold index looked up) and nothing changes
            for (int i = 0; i < WARM_CALLS; i++) {
                producer.cancelById(business, "warm-up-" + i);
                producer.rescheduleById(business, "warm-up-" + i, Instant.now().plus(Duration.ofDays(8)));
            }
            long[] cancel = new long[ops];
            long[] reschedule = new long[ops];
            for (int i = 0; i < ops; i++) {
                long t = System.nanoTime();
                producer.cancelById(business, id(r.nextInt(entries / 2) * 2));
                cancel[i] = System.nanoTime() - t;
                t = System.nanoTime();
                producer.rescheduleById(
                        business,
                        id(r.nextInt(entries / 2) * 2 + 1),
                        Instant.now().plus(Duration.ofDays(8)));
                reschedule[i] = System.nanoTime() - t;
            }
            double[] cancelMs = {pct(cancel, 50), pct(cancel, 99)};
            double[] rescheduleMs = {pct(reschedule, 50), pct(reschedule, 99)};
            Scenarios.log(
                    "  cold cancel p50 %.2f p99 %.2f ms; reschedule p50 %.2f p99 %.2f ms (%,d each)",
                    cancelMs[0], cancelMs[1], rescheduleMs[0], rescheduleMs[1], ops);
            int head = ops / 10;
            Scenarios.log(
                    "  (p99 of the first %,d calls / of the others: cancel %.2f / %.2f, reschedule %.2f / %.2f ms)",
                    head,
                    pct(Arrays.copyOfRange(cancel, 0, head), 99),
                    pct(Arrays.copyOfRange(cancel, head, ops), 99),
                    pct(Arrays.copyOfRange(reschedule, 0, head), 99),
                    pct(Arrays.copyOfRange(reschedule, head, ops), 99));

            // promotion: the relay started without cold-after brings every block back (docs/cold-tier.md); cancelled
            // entries come back as "skipped", so the move is over when promoted + skipped reach the demoted
            Moved promote;
            try (ConfigurableApplicationContext relay = startInProcess(business, xq[0], null)) {
                promote = awaitMoves(relay, business, demoted, "promoted", "skipped");
            }
            long promoted = promote.total();
            Scenarios.log(
                    "  promoted or skipped %,d in %,d ms: %,.0f/s (Redis %.1f µs, JVM %.1f µs CPU an entry; %s)",
                    promoted,
                    promote.step().wallMs,
                    promote.rate(),
                    promote.redisUs(),
                    promote.jvmUs(),
                    promote.step().ping());
            return new Moves(
                    entries,
                    messageBytes / (double) entries,
                    loadMs,
                    hot,
                    cold,
                    live,
                    blocks,
                    demoted,
                    demote.rate(),
                    demote.redisUs(),
                    demote.jvmUs(),
                    promoted,
                    promote.rate(),
                    promote.redisUs(),
                    promote.jvmUs(),
                    cancelMs,
                    rescheduleMs,
                    ops,
                    Storm.loadAverage());
        } finally {
            infra.deleteRunKeys();
            factory.destroy();
        }
    }

    /**
     * Sizing of plain-ZADD members, after {@link #moves()} (whose keys are deleted by then): the same n JSON orders
     * as members of {@code K:i} in a business of its own, no payload hash entry; Redis bytes per entry hot (after
     * loading) and cold (once the relay, started with cold-after 1 d as for the by-id entries, has demoted them).
     */
    Plain plain() throws Exception {
        String business = infra.name("cold-plain");
        String[] xq = infra.exchangeAndQueue("cold-plain");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(infra.config.redisHost(), infra.config.redisPort()));
        factory.afterPropertiesSet();
        factory.start();
        try {
            RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(factory);
            // the by-id entries were UNLINKed: their memory is freed by Redis's background thread, not yet maybe
            awaitLazyFree();
            long base = infra.stats().usedMemory();
            Scenarios.log("cold: loading %,d plain-ZADD members (the same JSON orders) due in 7-30 days", entries);
            long t0 = System.nanoTime();
            long messageBytes = load(keys, false);
            long loadMs = (System.nanoTime() - t0) / 1_000_000;
            double hot = (infra.stats().usedMemory() - base) / (double) entries;
            Scenarios.log("  loaded in %,d ms; hot %.1f B/entry", loadMs, hot);

            Moved demote;
            try (ConfigurableApplicationContext relay = startInProcess(business, xq[0], MOVES_COLD_AFTER)) {
                demote = awaitMoves(relay, business, entries, "demoted");
            }
            double cold = (infra.stats().usedMemory() - base) / (double) entries;
            ColdCount.Count counted = ColdCount.of(producer, factory, business, SHARDS, true);
            Scenarios.log(
                    "  plain-ZADD members: demoted %,d in %,d ms: %,.0f/s (Redis %.1f µs, JVM %.1f µs CPU an entry;"
                            + " %s); cold %.1f B/entry, %,d live in %,d blocks",
                    demote.total(),
                    demote.step().wallMs,
                    demote.rate(),
                    demote.redisUs(),
                    demote.jvmUs(),
                    demote.step().ping(),
                    cold,
                    counted.entries(),
                    counted.blocks());
            return new Plain(
                    entries,
                    messageBytes / (double) entries,
                    loadMs,
                    hot,
                    cold,
                    counted.entries(),
                    counted.blocks(),
                    demote.total(),
                    demote.step().wallMs,
                    demote.rate(),
                    Storm.loadAverage());
        } finally {
            infra.deleteRunKeys();
            factory.destroy();
        }
    }

    /** Waits (up to 60 s) until Redis has freed what UNLINK left to its background thread: used_memory is a base. */
    private void awaitLazyFree() throws InterruptedException {
        long until = System.currentTimeMillis() + 60_000;
        while (lazyFreePending() > 0 && System.currentTimeMillis() < until) {
            Thread.sleep(50);
        }
    }

    private long lazyFreePending() {
        for (String line : infra.redis().info("memory").split("\r?\n")) {
            if (line.startsWith("lazyfree_pending_objects:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return 0;
    }

    /**
     * The relay in the harness JVM (a Spring Boot context, as {@link RelayContender} starts it), on the business's
     * 16 shards; {@code coldAfter} null: without a cold tier, so it brings every cold block back.
     */
    private ConfigurableApplicationContext startInProcess(String business, String exchange, String coldAfter) {
        Map<String, Object> p = RelayContender.baseProperties(infra);
        String prefix = "relay.businesses." + business + ".";
        p.put(prefix + "exchange", exchange);
        p.put(prefix + "routing-key", "due");
        p.put(prefix + "shards", SHARDS);
        if (coldAfter != null) {
            p.put(prefix + "cold-after", coldAfter);
        }
        return RelayContender.startRelay(p);
    }

    /**
     * One move of the relay, measured from the first entry its {@code delay.relay.cold.moves} counter (directions
     * summed) counts until it reaches {@code target} or stops moving for {@link #MOVE_STALL_MS}; {@code total} is the
     * counter at the end, {@code inWindow} what it counted within the measured step.
     */
    private record Moved(Measured step, long total, long inWindow) {
        double rate() {
            return step.rate(inWindow);
        }

        double redisUs() {
            return step.redisUs(inWindow);
        }

        double jvmUs() {
            return step.jvmUs(inWindow);
        }
    }

    private Moved awaitMoves(ConfigurableApplicationContext relay, String business, long target, String... directions)
            throws Exception {
        MeterRegistry registry = relay.getBean(MeterRegistry.class);
        long startBy = System.currentTimeMillis() + MOVE_STALL_MS;
        while (moved(registry, business, directions) == 0 && System.currentTimeMillis() < startBy) {
            Thread.sleep(1);
        }
        long first = moved(registry, business, directions);
        if (first == 0) {
            throw new IllegalStateException(
                    "the relay moved nothing (" + String.join("/", directions) + ") in " + MOVE_STALL_MS / 1000 + " s");
        }
        long[] last = new long[1];
        Measured step = measure(() -> {
            long seen = first;
            long seenAt = System.currentTimeMillis();
            while (seen < target && System.currentTimeMillis() - seenAt < MOVE_STALL_MS) {
                long now = moved(registry, business, directions);
                if (now > seen) {
                    seen = now;
                    seenAt = System.currentTimeMillis();
                }
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            last[0] = seen;
        });
        if (last[0] < target) {
            Scenarios.log(
                    "  warning: the relay's %s moves stopped at %,d of %,d",
                    String.join("+", directions), last[0], target);
        }
        if (directions.length > 1) {
            StringBuilder split = new StringBuilder();
            for (String direction : directions) {
                split.append(split.length() == 0 ? "" : ", ")
                        .append(direction)
                        .append(' ')
                        .append(String.format(Locale.ROOT, "%,d", moved(registry, business, direction)));
            }
            Scenarios.log("  the relay's moves: %s", split);
        }
        return new Moved(step, last[0], last[0] - first);
    }

    /** The relay's {@code delay.relay.cold.moves} counter of the business, over the given directions. */
    private static long moved(MeterRegistry registry, String business, String... directions) {
        double sum = 0;
        for (String direction : directions) {
            Counter c = registry.find(COLD_MOVES)
                    .tag("business", business)
                    .tag("direction", direction)
                    .counter();
            sum += c == null ? 0 : c.count();
        }
        return (long) sum;
    }

    /**
     * Wall time, Redis CPU and this JVM's CPU of one step; and a PING's round trip on a connection of its own every
     * ~1 ms during the step (p50, p99, max ms): how long any other client (a worker's pop) waits behind the moves.
     */
    private record Measured(long wallMs, double redisCpuS, long jvmCpuNs, double[] pingMs, String slowCalls) {
        String ping() {
            return String.format(
                    Locale.ROOT,
                    "PING p50 %.2f p99 %.2f max %.2f ms; script calls over 1 ms%s",
                    pingMs[0],
                    pingMs[1],
                    pingMs[2],
                    slowCalls);
        }

        double rate(long n) {
            return wallMs == 0 ? 0 : n * 1000.0 / wallMs;
        }

        double redisUs(long n) {
            return n == 0 ? 0 : redisCpuS * 1e6 / n;
        }

        double jvmUs(long n) {
            return n == 0 ? 0 : jvmCpuNs / 1e3 / n;
        }
    }

    private Measured measure(Runnable step) throws Exception {
        RedisStats before = infra.stats();
        long jvm = ProcessCpu.self();
        AtomicBoolean done = new AtomicBoolean();
        List<Long> pings = new ArrayList<>();
        Thread probe = new Thread(
                () -> {
                    byte[] pong = new byte[7];
                    byte[] ping = "PING\r\n".getBytes(StandardCharsets.US_ASCII);
                    try (Socket socket = new Socket(infra.config.redisHost(), infra.config.redisPort())) {
                        socket.setTcpNoDelay(true);
                        OutputStream out = socket.getOutputStream();
                        InputStream in = socket.getInputStream();
                        while (!done.get()) {
                            long t0 = System.nanoTime();
                            out.write(ping);
                            out.flush();
                            in.readNBytes(pong, 0, pong.length);
                            pings.add(System.nanoTime() - t0);
                            Thread.sleep(1);
                        }
                    } catch (IOException | InterruptedException e) {
                        // the probe ends with the step
                    }
                },
                "bench-cold-ping");
        probe.start();
        boolean slowlog = infra.config.privateRedis();
        if (slowlog) {
            // the private instance only: every call over 1 ms is logged, to see how long one move holds Redis
            infra.redis().configSet("slowlog-log-slower-than", "1000");
            infra.redis().configSet("slowlog-max-len", "100000");
            infra.redis().slowlogReset();
        }
        long t = System.nanoTime();
        step.run();
        long wall = (System.nanoTime() - t) / 1_000_000;
        done.set(true);
        probe.join(5_000);
        long[] p = pings.stream().mapToLong(Long::longValue).toArray();
        double[] pingMs =
                p.length == 0 ? new double[] {-1, -1, -1} : new double[] {pct(p, 50), pct(p, 99), pct(p, 100)};
        String slow = slowlog ? slowCalls() : " (not measured: shared Redis)";
        return new Measured(wall, infra.stats().since(before).cpuSeconds(), ProcessCpu.self() - jvm, pingMs, slow);
    }

    /** The slow log's script calls by script (told apart by their number of keys): count, over 5 ms, longest. */
    private String slowCalls() {
        Map<String, long[]> by = new java.util.TreeMap<>();
        for (Object o : infra.redis().slowlogGet(100_000)) {
            List<?> entry = (List<?>) o;
            long micros = (Long) entry.get(2);
            List<?> args = (List<?>) entry.get(3);
            String name = args.isEmpty() ? "other" : new String((byte[]) args.get(0), StandardCharsets.UTF_8);
            if (args.size() > 2
                    && new String((byte[]) args.get(0), StandardCharsets.UTF_8).equalsIgnoreCase("evalsha")) {
                name = switch (new String((byte[]) args.get(2), StandardCharsets.UTF_8)) {
                    case "4" -> "pick";
                    case "7" -> "demote";
                    case "3" -> "due";
                    case "5" -> "promote";
                    default -> "cold-count, pops and acks";
                };
            }
            long[] v = by.computeIfAbsent(name, k -> new long[3]);
            v[0]++;
            if (micros > 5_000) {
                v[1]++;
            }
            v[2] = Math.max(v[2], micros);
        }
        // the log's entries are Redis memory: emptied before the next figure of used_memory
        infra.redis().slowlogReset();
        infra.redis().configSet("slowlog-log-slower-than", "10000");
        StringBuilder b = new StringBuilder();
        by.forEach((name, v) -> b.append(
                String.format(Locale.ROOT, " %s %d (%d over 5 ms, max %.1f ms)", name, v[0], v[1], v[2] / 1000.0)));
        return b.length() == 0 ? " none" : ":" + b;
    }

    Lag lag() throws Exception {
        if (relayJar == null || !Files.isRegularFile(relayJar)) {
            throw new IllegalStateException("no relay exec jar: " + relayJar + " (bench.sh builds and passes it)");
        }
        Files.createDirectories(logs);
        String[] xq = infra.exchangeAndQueue("cold-lag");
        String business = infra.name("cold-lag");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        Path relayLog = logs.resolve("cold-lag-relay.log");
        Process relay = startRelay(business, xq[0], relayLog);
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(infra.config.redisHost(), infra.config.redisPort()));
        factory.afterPropertiesSet();
        factory.start();
        RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(factory);
        Connection connection = infra.amqpFactory().newConnection("relay-bench-cold-consumer");
        int n = LAG_RATE * LAG_SECONDS;
        try {
            LagProcesses.awaitLogLine(relay, relayLog, "delay-relay started", 120);
            // warm-up (not reported): a relay that has run all day has its publish path compiled; these are hot
            Scenarios.log("cold lag: warm-up of %,d hot entries at %,d/s (not reported)", WARM_UP, LAG_RATE);
            long[] warm = Messages.dues(WARM_UP, System.currentTimeMillis() + 1_000, WARM_UP * 1_000L / LAG_RATE);
            infra.loadShards(keys, SHARDS, Messages.bodies(warm, infra.config.messageBytes(), WARM_SEQ), warm);
            Thread.sleep(WARM_UP * 1_000L / LAG_RATE + 3_000);
            long t = System.currentTimeMillis() + LAG_AHEAD_MS;
            long[] relayedAt = new long[n];
            long[] due = new long[n];
            AtomicInteger received = new AtomicInteger();
            AtomicInteger duplicates = new AtomicInteger();
            Channel channel = connection.createChannel();
            channel.basicConsume(xq[1], true, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    long seq = Messages.seqOf(body);
                    if (seq < 0 || seq >= n) {
                        // the warm-up's (numbered from WARM_SEQ)
                        return;
                    }
                    int i = (int) seq;
                    if (relayedAt[i] != 0) {
                        duplicates.incrementAndGet();
                        return;
                    }
                    Object r = props.getHeaders() == null
                            ? null
                            : props.getHeaders().get(RelayHeaders.RELAYED_AT);
                    due[i] = Messages.dueOf(body);
                    relayedAt[i] = r instanceof Number num ? num.longValue() : -1;
                    received.incrementAndGet();
                }
            });
            Scenarios.log(
                    "cold lag: %,d entries due at %,d/s for %d s from %d s ahead, cold-after %s (relay exec jar)",
                    n, LAG_RATE, LAG_SECONDS, LAG_AHEAD_MS / 1000, LAG_COLD_AFTER);
            long[] dues = Messages.dues(n, t, LAG_SECONDS * 1_000L);
            infra.loadShards(keys, SHARDS, Messages.bodies(dues, infra.config.messageBytes(), 0), dues);
            long peak = 0;
            long deadline = t + LAG_SECONDS * 1_000L + 60_000;
            if (infra.config.privateRedis()) {
                infra.redis().configSet("slowlog-log-slower-than", "1000");
                infra.redis().configSet("slowlog-max-len", "100000");
                infra.redis().slowlogReset();
            }
            // where the entries are each second from 10 s before T: cold / hot (in K:i) / received, and the due ones
            StringBuilder timeline = new StringBuilder("  timeline (s from T: cold/hot/received of due):");
            long nextSample = t - 10_000;
            while (received.get() < n && System.currentTimeMillis() < deadline && relay.isAlive()) {
                long nowMs = System.currentTimeMillis();
                if (nowMs < t || nowMs >= nextSample) {
                    ColdCount.Count counted = ColdCount.of(producer, factory, business, SHARDS, false);
                    long cold = counted.entries();
                    long hot = counted.hot();
                    if (nowMs < t) {
                        peak = Math.max(peak, cold);
                    }
                    if (nowMs >= nextSample) {
                        long dueSoFar = Math.max(0, Math.min(n, (nowMs - t) * LAG_RATE / 1_000));
                        timeline.append(String.format(
                                Locale.ROOT,
                                " %+d:%d/%d/%d of %d",
                                (nowMs - t) / 1000,
                                cold,
                                hot,
                                received.get(),
                                dueSoFar));
                        nextSample += 1_000;
                    }
                }
                Thread.sleep(200);
            }
            Scenarios.log("%s", timeline);
            if (infra.config.privateRedis()) {
                Scenarios.log("  calls over 1 ms during the lag run (the relay's mover and workers)%s", slowCalls());
            }
            Thread.sleep(1_000); // a duplicate would come right after its first copy
            int got = received.get();
            long[] lag = new long[got];
            int k = 0;
            long early = 0;
            for (int i = 0; i < n; i++) {
                if (relayedAt[i] > 0) {
                    lag[k++] = relayedAt[i] - due[i];
                    if (relayedAt[i] < due[i]) {
                        early++;
                    }
                }
            }
            logWindows(dues, relayedAt, t);
            lag = Arrays.copyOf(lag, k);
            Arrays.sort(lag);
            long[] figures = {Scenarios.pct(lag, 0.5), Scenarios.pct(lag, 0.99), k == 0 ? -1 : lag[k - 1]};
            Lag result = new Lag(n, peak, got, duplicates.get(), early, figures, Storm.loadAverage());
            Scenarios.log(
                    "  %,d of %,d received (duplicates %d), %,d cold at most before the first was due; lag p50 %d p99 %d"
                            + " max %d ms; early %d; load %s",
                    got, n, duplicates.get(), peak, figures[0], figures[1], figures[2], early, result.loadAverage());
            return result;
        } finally {
            if (relay.isAlive()) {
                relay.destroy();
                if (!relay.waitFor(40, TimeUnit.SECONDS)) {
                    relay.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
            try {
                connection.close();
            } catch (IOException | RuntimeException ignored) {
                // closing anyway
            }
            factory.destroy();
            infra.purge(xq[1]);
            infra.deleteRunKeys();
        }
    }

    /** The lag p50/p99/max of every 5 s of due times, in the log: where in the run the lag was. */
    private static void logWindows(long[] dues, long[] relayedAt, long t) {
        StringBuilder line = new StringBuilder("  lag by 5 s of due times (p50/p99/max ms):");
        for (long from = t; from < t + LAG_SECONDS * 1_000L; from += 5_000) {
            long[] w = new long[dues.length];
            int k = 0;
            for (int i = 0; i < dues.length; i++) {
                if (relayedAt[i] > 0 && dues[i] >= from && dues[i] < from + 5_000) {
                    w[k++] = relayedAt[i] - dues[i];
                }
            }
            w = Arrays.copyOf(w, k);
            Arrays.sort(w);
            line.append(String.format(
                    Locale.ROOT,
                    " +%ds %d/%d/%d",
                    (from - t) / 1000,
                    Scenarios.pct(w, 0.5),
                    Scenarios.pct(w, 0.99),
                    k == 0 ? -1 : w[k - 1]));
        }
        Scenarios.log("%s", line);
    }

    private Process startRelay(String business, String exchange, Path log) throws IOException {
        String prefix = "relay.businesses." + business + ".";
        Map<String, Object> p = new LinkedHashMap<>();
        p.put(prefix + "exchange", exchange);
        p.put(prefix + "routing-key", "due");
        p.put(prefix + "shards", SHARDS);
        p.put(prefix + "cold-after", LAG_COLD_AFTER);
        return Storm.startRelayJar(infra, relayJar, p, log);
    }

    private static String id(int i) {
        return "order-" + (100_000_000L + i * 811L);
    }

    /**
     * Loads the entries through {@code redis-cli --pipe}: by id (ZADD K:i + HSET {K:i}:payloads, as schedule.lua leaves
     * them), or else as plain-ZADD members (ZADD K:i due message, the shard chosen by relay-api's rule on the message's
     * bytes, as its producers choose it); the same messages either way. Returns the total message bytes.
     */
    private long load(DelayQueueKeys keys, boolean byId) throws Exception {
        Random r = new Random(27);
        long now = System.currentTimeMillis();
        long total = 0;
        Process p = new ProcessBuilder(
                        "redis-cli",
                        "-h",
                        infra.config.redisHost(),
                        "-p",
                        Integer.toString(infra.config.redisPort()),
                        "--pipe")
                .redirectErrorStream(true)
                .start();
        try (OutputStream out = new BufferedOutputStream(p.getOutputStream(), 1 << 20)) {
            for (int i = 0; i < entries; i++) {
                long due = now + 7L * 86_400_000 + (long) (r.nextDouble() * 23L * 86_400_000);
                byte[] m = order(i, r);
                total += m.length;
                if (byId) {
                    String id = id(i);
                    int shard = shardOf(id);
                    command(out, "ZADD", keys.shard(shard), Long.toString(due), id);
                    command(out, "HSET", keys.payloads(shard), id, m);
                } else {
                    command(out, "ZADD", keys.shard(ShardSelector.shardOf(m, SHARDS)), Long.toString(due), m);
                }
            }
        }
        String reply = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        if (!reply.contains("errors: 0")) {
            throw new IllegalStateException("loading the cold entries failed: " + reply);
        }
        return total;
    }

    /** A realistic ~110 B JSON order message: order i's id, the rest drawn from {@code r}. */
    private static byte[] order(int i, Random r) {
        String message = "{\"orderId\":" + (100_000_000L + i * 811L)
                + ",\"userId\":" + (1_000_000 + r.nextInt(9_000_000))
                + ",\"action\":\"" + ACTIONS[r.nextInt(ACTIONS.length)]
                + "\",\"amount\":" + r.nextInt(2000) + "." + (10 + r.nextInt(90))
                + ",\"currency\":\"" + CURRENCIES[r.nextInt(CURRENCIES.length)]
                + "\",\"sku\":\"SKU-" + (10_000 + r.nextInt(90_000)) + "\"}";
        return message.getBytes(StandardCharsets.UTF_8);
    }

    private static int shardOf(String id) {
        CRC32 crc = new CRC32();
        crc.update(id.getBytes(StandardCharsets.UTF_8));
        return (int) (crc.getValue() % SHARDS);
    }

    private static void command(OutputStream out, Object... args) throws IOException {
        out.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (Object o : args) {
            byte[] v = o instanceof byte[] b ? b : o.toString().getBytes(StandardCharsets.UTF_8);
            out.write(("$" + v.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(v);
            out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
    }

    private static double pct(long[] nanos, int p) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * p / 100.0) - 1)] / 1e6;
    }

    /** Renders the cold section of the report (nothing when the scenario did not run). */
    static void render(StringBuilder b, Moves m, Plain plain, Lag lag) {
        if (m == null && plain == null && lag == null) {
            return;
        }
        b.append("## 7. Cold tier (issue 27)\n\n");
        if (m != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "%,d entries by id (realistic JSON orders, mean %.1f B), due in 7-30 days, %d shards, cold-after"
                            + " 1 d; loaded in %,d ms. Moves by the relay itself in the harness JVM (demotion: started with"
                            + " cold-after 1 d; promotion: started again without cold-after), timed from the first"
                            + " entry its delay.relay.cold.moves counter counts to the last; CPU = Redis"
                            + " used_cpu_user+sys and this JVM's CPU over the move, per entry. Cancel/reschedule:"
                            + " relay-api on cold entries, %,d each, after 2,000 unreported calls of each on ids never scheduled (JIT warm-up). Load average after: %s.%n%n",
                    m.n(),
                    m.messageBytes(),
                    SHARDS,
                    m.loadMs(),
                    m.ops(),
                    m.loadAverage()));
            if (plain != null) {
                b.append(plainMethod(plain));
            }
            b.append("| figure | measured | target |\n|---|---:|---:|\n");
            row(b, "Redis bytes per entry, hot (zset + payload hash)", fmt("%.1f", m.hotBytes()), "");
            row(
                    b,
                    String.format(
                            Locale.ROOT, "Redis bytes per entry, cold (%,d live in %,d blocks)", m.live(), m.blocks()),
                    fmt("**%.1f**", m.coldBytes()),
                    "≤ 60");
            if (plain != null) {
                plainRow(b, plain);
            }
            row(b, "demotion, entries/s", fmt("**%,.0f**", m.demoteRate()), "≥ 50,000");
            row(
                    b,
                    "demotion CPU per entry: Redis / relay JVM µs",
                    fmt("%.1f / %.1f", m.demoteRedisUs(), m.demoteJvmUs()),
                    "");
            row(b, "promotion, entries/s", fmt("**%,.0f**", m.promoteRate()), "≥ 50,000");
            row(
                    b,
                    "promotion CPU per entry: Redis / relay JVM µs",
                    fmt("%.1f / %.1f", m.promoteRedisUs(), m.promoteJvmUs()),
                    "");
            row(
                    b,
                    "cancel of a cold entry, p50 / p99 ms",
                    fmt("%.2f / **%.2f**", m.cancelMs()[0], m.cancelMs()[1]),
                    "p99 ≤ 5");
            row(
                    b,
                    "reschedule of a cold entry, p50 / p99 ms",
                    fmt("%.2f / **%.2f**", m.rescheduleMs()[0], m.rescheduleMs()[1]),
                    "p99 ≤ 5");
            b.append('\n');
        } else if (plain != null) {
            b.append(plainMethod(plain));
            b.append("| figure | measured | target |\n|---|---:|---:|\n");
            plainRow(b, plain);
            b.append('\n');
        }
        if (lag != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "Lag of promoted entries: the relay's exec jar (own JVM, 16 shards, cold-after %s); %,d messages"
                            + " written %d s ahead, due evenly at %,d/s for %d s; %,d were cold at once before the"
                            + " first fell due. Lag = x-delay-relayed-at − due. Load average after: %s.%n%n",
                    LAG_COLD_AFTER,
                    lag.n(),
                    LAG_AHEAD_MS / 1000,
                    LAG_RATE,
                    LAG_SECONDS,
                    lag.coldPeak(),
                    lag.loadAverage()));
            b.append("| received (lost) | duplicates | lag p50 / p99 / max ms | early | target |\n"
                    + "|---:|---:|---:|---:|---|\n");
            b.append(String.format(
                    Locale.ROOT,
                    "| %,d (%,d) | %,d | %d / **%d** / %d | **%d** | p99 ≤ 15 ms, early 0 |%n%n",
                    lag.received(),
                    lag.n() - lag.received(),
                    lag.duplicates(),
                    lag.lagMs()[0],
                    lag.lagMs()[1],
                    lag.lagMs()[2],
                    lag.early()));
        }
    }

    /** The plain-ZADD members' paragraph: what was loaded and how the relay demoted it. */
    private static String plainMethod(Plain p) {
        return String.format(
                Locale.ROOT,
                "Plain-ZADD members: then the same %,d JSON orders (mean %.1f B) scheduled as the design's main producer"
                        + " path does, ZADD K:i due message with the message as the member (no payload hash entry, shard"
                        + " = CRC32 of the member's bytes mod %d as relay-api's ShardSelector), in a business of its own"
                        + " once the by-id entries were deleted and freed; loaded in %,d ms; demoted by the relay started"
                        + " the same way (cold-after 1 d): %,d in %,d ms (%,.0f/s), %,d live in %,d blocks. Bytes per"
                        + " entry as for the by-id entries: used_memory after loading and after the demotion, less"
                        + " before loading. Load average after: %s.%n%n",
                p.n(),
                p.messageBytes(),
                SHARDS,
                p.loadMs(),
                p.demoted(),
                p.demoteMs(),
                p.demoteRate(),
                p.live(),
                p.blocks(),
                p.loadAverage());
    }

    private static void plainRow(StringBuilder b, Plain p) {
        row(
                b,
                "Redis bytes per entry, hot / cold, plain-ZADD member (~110 B JSON)",
                fmt("%.1f / **%.1f**", p.hotBytes(), p.coldBytes()),
                "≤ 60 cold");
    }

    private static void row(StringBuilder b, String figure, String measured, String target) {
        b.append("| ")
                .append(figure)
                .append(" | ")
                .append(measured)
                .append(" | ")
                .append(target)
                .append(" |\n");
    }

    private static String fmt(String format, Object... args) {
        return String.format(Locale.ROOT, format, args);
    }
}
