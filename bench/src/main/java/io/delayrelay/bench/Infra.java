package io.delayrelay.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.ShardSelector;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;

/**
 * The harness's own Redis and RabbitMQ access: loading, INFO snapshots, queue depth, and cleanup of every key,
 * exchange and queue it made (all named after the run id).
 */
final class Infra implements AutoCloseable {

    final BenchConfig config;
    final String run = "bench-" + UUID.randomUUID().toString().substring(0, 8);
    private final RedisClient redisClient;
    private final StatefulRedisConnection<byte[], byte[]> redis;
    private final Connection amqp;
    private final Channel channel;
    private final List<String> exchanges = new ArrayList<>();
    private final List<String> queues = new ArrayList<>();
    private int names;

    Infra(BenchConfig config) throws Exception {
        this.config = config;
        redisClient = RedisClient.create(RedisURI.create(config.redisHost(), config.redisPort()));
        redis = redisClient.connect(ByteArrayCodec.INSTANCE);
        ConnectionFactory cf = amqpFactory();
        amqp = cf.newConnection("relay-bench");
        channel = amqp.createChannel();
    }

    ConnectionFactory amqpFactory() {
        ConnectionFactory cf = new ConnectionFactory();
        cf.setHost(config.rabbitHost());
        cf.setPort(config.rabbitPort());
        return cf;
    }

    String name(String what) {
        return run + "-" + what + "-" + (names++);
    }

    RedisCommands<byte[], byte[]> redis() {
        return redis.sync();
    }

    RedisStats stats() {
        return RedisStats.parse(redis.sync().info("everything"));
    }

    String redisVersion() {
        for (String line : redis.sync().info("server").split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                return line.substring("redis_version:".length()).trim();
            }
        }
        return "?";
    }

    String rabbitVersion() {
        Object v = amqp.getServerProperties().get("version");
        return v == null ? "?" : v.toString();
    }

    /** A durable direct exchange and a durable queue bound to it with routing key "due". */
    String[] exchangeAndQueue(String what) throws IOException {
        String exchange = name(what + "-x");
        String queue = name(what + "-q");
        channel.exchangeDeclare(exchange, "direct", true);
        exchanges.add(exchange);
        channel.queueDeclare(queue, true, false, false, null);
        queues.add(queue);
        channel.queueBind(queue, exchange, "due");
        return new String[] {exchange, queue};
    }

    long depth(String queue) throws IOException {
        AMQP.Queue.DeclareOk ok = channel.queueDeclarePassive(queue);
        return ok.getMessageCount();
    }

    void purge(String queue) throws IOException {
        channel.queuePurge(queue);
    }

    Channel channel() {
        return channel;
    }

    Connection amqp() {
        return amqp;
    }

    /**
     * Loads messages into the relay's layout (ZADD K:shard due message, shard = CRC32 rule), pipelined with many
     * members per ZADD. Returns elapsed ms.
     */
    long loadShards(DelayQueueKeys keys, int shards, List<byte[]> bodies, long[] dues) throws Exception {
        long start = System.nanoTime();
        Map<Integer, List<ScoredValue<byte[]>>> pending = new HashMap<>();
        List<RedisFuture<?>> futures = new ArrayList<>();
        RedisAsyncCommands<byte[], byte[]> async = redis.async();
        for (int i = 0; i < bodies.size(); i++) {
            byte[] body = bodies.get(i);
            int shard = ShardSelector.shardOf(body, shards);
            List<ScoredValue<byte[]>> list = pending.computeIfAbsent(shard, s -> new ArrayList<>());
            list.add(ScoredValue.just(dues[i], body));
            if (list.size() == 500) {
                futures.add(zadd(async, keys, shard, list));
                pending.remove(shard);
                if (futures.size() >= 64) {
                    awaitAll(futures);
                }
            }
        }
        for (Map.Entry<Integer, List<ScoredValue<byte[]>>> e : pending.entrySet()) {
            futures.add(zadd(async, keys, e.getKey(), e.getValue()));
        }
        awaitAll(futures);
        return (System.nanoTime() - start) / 1_000_000;
    }

    @SuppressWarnings("unchecked")
    private static RedisFuture<Long> zadd(
            RedisAsyncCommands<byte[], byte[]> async,
            DelayQueueKeys keys,
            int shard,
            List<ScoredValue<byte[]>> values) {
        return async.zadd(DelayQueueKeys.bytes(keys.shard(shard)), values.toArray(new ScoredValue[0]));
    }

    static void awaitAll(List<RedisFuture<?>> futures) throws Exception {
        for (RedisFuture<?> f : futures) {
            f.get(60, TimeUnit.SECONDS);
        }
        futures.clear();
    }

    /** Deletes every Redis key whose name contains the run id (relay keys, seed keys, Redisson keys). */
    long deleteRunKeys() {
        long deleted = 0;
        RedisCommands<byte[], byte[]> sync = redis.sync();
        ScanCursor cursor = ScanCursor.INITIAL;
        ScanArgs args = ScanArgs.Builder.matches("*" + run + "*").limit(5000);
        do {
            KeyScanCursor<byte[]> page = sync.scan(cursor, args);
            if (!page.getKeys().isEmpty()) {
                deleted += sync.unlink(page.getKeys().toArray(new byte[0][]));
            }
            cursor = page;
        } while (!cursor.isFinished());
        return deleted;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        try {
            deleteRunKeys();
        } catch (RuntimeException e) {
            System.err.println("warning: could not delete bench keys: " + e.getMessage());
        }
        for (String q : queues) {
            try {
                channel.queueDelete(q);
            } catch (IOException | RuntimeException e) {
                System.err.println("warning: could not delete queue " + q + ": " + e.getMessage());
            }
        }
        for (String x : exchanges) {
            try {
                channel.exchangeDelete(x);
            } catch (IOException | RuntimeException e) {
                System.err.println("warning: could not delete exchange " + x + ": " + e.getMessage());
            }
        }
        try {
            amqp.close();
        } catch (IOException | RuntimeException ignored) {
            // closing anyway
        }
        redis.close();
        redisClient.shutdown();
    }
}
