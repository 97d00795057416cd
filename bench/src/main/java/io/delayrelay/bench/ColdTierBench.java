package io.delayrelay.bench;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.cold.ColdBlock;
import io.delayrelay.app.engine.cold.ColdMover;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.engine.cold.ColdTiming;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The cold tier's figures (docs/cold-tier.md), on a private, empty redis-server that it flushes: n realistic ~100 B
 * JSON order messages scheduled by id, due in 7-30 days, over 16 shards; Redis bytes per entry hot, then after the
 * relay's scripts demoted all of them (cold-after 1 day); demotion and promotion throughput; cancel and reschedule
 * p99 of a cold entry through relay-api (the contract scripts).
 *
 * <pre>java -cp bench/target/...:deps io.delayrelay.bench.ColdTierBench 1000000 6431</pre>
 */
public final class ColdTierBench {

    private static final int SHARDS = 16;
    private static final String BUSINESS = "cold-bench";
    private static final String[] ACTIONS = {"review", "auto-close", "remind", "renew", "expire", "follow-up"};
    private static final String[] CURRENCIES = {"EUR", "USD", "GBP", "CNY", "JPY"};

    private ColdTierBench() {}

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        int port = Integer.parseInt(args[1]);
        LettuceConnectionFactory factory =
                new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
        factory.afterPropertiesSet();
        factory.start();
        var redis = ByteRedisTemplates.create(factory);
        ColdStore store = new ColdStore(redis);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(BUSINESS);
        redisCli(port, "FLUSHALL");
        long base = usedMemory(port);
        long[] bytes = load(n, port, keys);
        long hot = usedMemory(port) - base;
        System.out.printf(
                "entries %d, mean message %.1f B; hot (zset + payload hash): %.1f B/entry%n",
                n, bytes[0] / (double) n, hot / (double) n);

        ColdTiming timing = ColdTiming.of(Duration.ofDays(1));
        long us0 = scriptMicros(port);
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(ColdMover.THREADS);
        AtomicLong moved = new AtomicLong();
        ColdMover.inParallel(pool, shards(), shard -> moved.addAndGet(
                ColdMover.demoteShard(store, keys, shard, timing, Long.MAX_VALUE, (s, d, c) -> {})));
        long demoted = moved.getAndSet(0);
        double demoteS = (System.nanoTime() - t0) / 1e9;
        System.out.printf("demote: Redis script time %.1f s%n", (scriptMicros(port) - us0) / 1e6);
        long cold = usedMemory(port) - base;
        long live = 0;
        long blocks = 0;
        for (int shard = 0; shard < SHARDS; shard++) {
            ColdStore.Count c = store.count(keys, shard);
            live += c.entries();
            blocks += c.blocks();
        }
        System.out.printf(
                "demoted %d in %.1f s: %.0f entries/s; cold: %.1f B/entry (%d live, %d blocks)%n",
                demoted, demoteS, demoted / demoteS, cold / (double) n, live, blocks);

        RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(factory);
        Random r = new Random(7);
        int ops = Math.min(10_000, n / 4);
        long[] cancel = new long[ops];
        long[] reschedule = new long[ops];
        for (int i = 0; i < ops; i++) {
            long t = System.nanoTime();
            producer.cancelById(BUSINESS, id(r.nextInt(n / 2) * 2));
            cancel[i] = System.nanoTime() - t;
            t = System.nanoTime();
            producer.rescheduleById(
                    BUSINESS, id(r.nextInt(n / 2) * 2 + 1), Instant.now().plus(Duration.ofDays(8)));
            reschedule[i] = System.nanoTime() - t;
        }
        System.out.printf(
                "cold cancel p50 %.2f ms p99 %.2f ms; cold reschedule p50 %.2f ms p99 %.2f ms (%d each)%n",
                pct(cancel, 50), pct(cancel, 99), pct(reschedule, 50), pct(reschedule, 99), ops);

        us0 = scriptMicros(port);
        t0 = System.nanoTime();
        ColdMover.inParallel(pool, shards(), shard -> moved.addAndGet(
                ColdMover.promoteShard(store, keys, shard, Duration.ofDays(60).toMillis(), (s, d, c) -> {})));
        long back = moved.get();
        pool.shutdown();
        double promoteS = (System.nanoTime() - t0) / 1e9;
        System.out.printf("promote: Redis script time %.1f s%n", (scriptMicros(port) - us0) / 1e6);
        System.out.printf(
                "promoted %d in %.1f s: %.0f entries/s; hot again: %.1f B/entry%n",
                back, promoteS, back / promoteS, (usedMemory(port) - base) / (double) n);
        redisCli(port, "FLUSHALL");
        factory.destroy();
    }

    private static List<Integer> shards() {
        List<Integer> shards = new ArrayList<>();
        for (int shard = 0; shard < SHARDS; shard++) {
            shards.add(shard);
        }
        return shards;
    }

    private static String id(int i) {
        return "order-" + (100_000_000L + i * 811L);
    }

    /** Loads n entries by id through redis-cli --pipe (as schedule.lua would leave them); returns {message bytes}. */
    private static long[] load(int n, int port, DelayQueueKeys keys) throws Exception {
        Random r = new Random(27);
        long now = System.currentTimeMillis();
        long[] total = new long[1];
        Process p = new ProcessBuilder("redis-cli", "-p", Integer.toString(port), "--pipe")
                .redirectErrorStream(true)
                .start();
        try (OutputStream out = new BufferedOutputStream(p.getOutputStream(), 1 << 20)) {
            for (int i = 0; i < n; i++) {
                String id = id(i);
                long due = now + 7L * 86_400_000 + (long) (r.nextDouble() * 23L * 86_400_000);
                String message = String.format(
                        "{\"orderId\":%d,\"userId\":%d,\"action\":\"%s\",\"amount\":%d.%02d,\"currency\":\"%s\",\"sku\":\"SKU-%05d\"}",
                        100_000_000L + i * 811L,
                        1_000_000 + r.nextInt(9_000_000),
                        ACTIONS[r.nextInt(ACTIONS.length)],
                        r.nextInt(2000),
                        r.nextInt(100),
                        CURRENCIES[r.nextInt(CURRENCIES.length)],
                        r.nextInt(100_000));
                byte[] m = message.getBytes(StandardCharsets.UTF_8);
                total[0] += m.length;
                int shard = shardOf(id);
                command(out, "ZADD", keys.shard(shard), Long.toString(due), id);
                command(out, "HSET", keys.payloads(shard), id, m);
            }
        }
        String reply = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        if (!reply.contains("errors: 0")) {
            throw new IllegalStateException(reply);
        }
        return total;
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

    private static String redisCli(int port, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("redis-cli", "-p", Integer.toString(port)));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        return out;
    }

    private static long scriptMicros(int port) throws Exception {
        long us = 0;
        for (String line : redisCli(port, "INFO", "commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_eval")) {
                int at = line.indexOf("usec=");
                us += Long.parseLong(line.substring(at + 5, line.indexOf(',', at)));
            }
        }
        return us;
    }

    private static long usedMemory(int port) throws Exception {
        for (String line : redisCli(port, "INFO", "memory").split("\r?\n")) {
            if (line.startsWith("used_memory:")) {
                return Long.parseLong(line.substring("used_memory:".length()).trim());
            }
        }
        throw new IllegalStateException("no used_memory in INFO memory");
    }
}
