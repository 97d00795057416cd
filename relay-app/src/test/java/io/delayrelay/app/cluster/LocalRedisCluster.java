package io.delayrelay.app.cluster;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

import io.delayrelay.api.DelayQueueKeys;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisClusterNode;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A real local Redis Cluster (3 masters on loopback) started and stopped through {@code scripts/redis-cluster.sh}.
 * Fails loudly when the script or redis-server is missing: never skips.
 */
final class LocalRedisCluster implements AutoCloseable {

    static final List<Integer> PORTS = List.of(7101, 7102, 7103);

    private final File script;
    private final LettuceConnectionFactory factory;

    private LocalRedisCluster(File script) {
        this.script = script;
        this.factory = new LettuceConnectionFactory(new RedisClusterConfiguration(nodes()));
        factory.afterPropertiesSet();
        factory.start();
    }

    /** Runs {@code scripts/redis-cluster.sh up} and connects. */
    static LocalRedisCluster up() {
        File script = findScript();
        run(script, "up");
        return new LocalRedisCluster(script);
    }

    /** The value for {@code spring.data.redis.cluster.nodes}. */
    static String nodesProperty() {
        return String.join(",", nodes());
    }

    private static List<String> nodes() {
        return PORTS.stream().map(p -> "127.0.0.1:" + p).toList();
    }

    LettuceConnectionFactory factory() {
        return factory;
    }

    RedisClusterConnection connection() {
        return factory.getClusterConnection();
    }

    /** "host:port" of the master serving the key. */
    String masterOf(String key) {
        try (RedisClusterConnection c = connection()) {
            RedisClusterNode node = c.clusterGetNodeForKey(DelayQueueKeys.bytes(key));
            return node.getHost() + ":" + node.getPort();
        }
    }

    /** How many of shards 0..m-1 of the keys each master serves. */
    Map<String, Integer> shardSpread(DelayQueueKeys keys, int m) {
        Map<String, Integer> spread = new TreeMap<>();
        nodes().forEach(n -> spread.put(n, 0));
        for (int shard = 0; shard < m; shard++) {
            spread.merge(masterOf(keys.shard(shard)), 1, Integer::sum);
        }
        return spread;
    }

    /** Deletes every per-shard key of shards 0..m-1 plus meta and cursor (one key at a time: no cross-slot DEL). */
    void deleteKeys(DelayQueueKeys keys, int m) {
        try (RedisClusterConnection c = connection()) {
            List<String> names = new ArrayList<>(List.of(keys.meta(), keys.cursor()));
            for (int shard = 0; shard < m; shard++) {
                names.addAll(List.of(
                        keys.shard(shard),
                        keys.payloads(shard),
                        keys.inflight(shard),
                        keys.attempts(shard),
                        keys.dead(shard),
                        keys.deadReasons(shard)));
            }
            for (String name : names) {
                c.keyCommands().del(name.getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    /** Sum of ZCARD over the given per-shard key of shards 0..m-1. */
    long zcardSum(DelayQueueKeys keys, int m, BiFunction<DelayQueueKeys, Integer, String> key) {
        long total = 0;
        try (RedisClusterConnection c = connection()) {
            for (int shard = 0; shard < m; shard++) {
                Long n = c.zSetCommands().zCard(DelayQueueKeys.bytes(key.apply(keys, shard)));
                total += n == null ? 0 : n;
            }
        }
        return total;
    }

    @Override
    public void close() {
        try {
            factory.destroy();
        } finally {
            run(script, "down");
        }
    }

    private static File findScript() {
        for (String candidate : List.of("../scripts/redis-cluster.sh", "scripts/redis-cluster.sh")) {
            File f = new File(candidate);
            if (f.canExecute()) {
                return f.getAbsoluteFile();
            }
        }
        throw new IllegalStateException("scripts/redis-cluster.sh not found from " + new File(".").getAbsolutePath());
    }

    private static void run(File script, String command) {
        try {
            Process p = new ProcessBuilder(script.getPath(), command)
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("'" + script + " " + command + "' failed (a Redis Cluster test needs "
                        + "redis-server and redis-cli installed; it never skips):\n" + out);
            }
            System.out.print(out);
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + script + " " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
