package io.delayrelay.app.cluster;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.OwnRedisServer;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisClusterNode;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A real local Redis Cluster (3 masters on loopback) started and stopped through {@code scripts/redis-cluster.sh},
 * on free ports (each with its cluster bus port, + 10000, free too) and in a directory under target/ of its own, so
 * two work trees never share one. After the script says it is up, each node must report the pid its own pid file
 * holds ({@code INFO server} process_id): a port someone else answers on fails the test instead of passing against
 * the wrong server. Fails loudly when the script or redis-server is missing: never skips.
 */
final class LocalRedisCluster implements AutoCloseable {

    private final File script;
    private final List<Integer> ports;
    private final File dir;
    private final LettuceConnectionFactory factory;

    private LocalRedisCluster(File script, List<Integer> ports, File dir) {
        this.script = script;
        this.ports = ports;
        this.dir = dir;
        this.factory = new LettuceConnectionFactory(new RedisClusterConfiguration(nodes()));
        factory.afterPropertiesSet();
        factory.start();
    }

    /** Runs {@code scripts/redis-cluster.sh up} on free ports, checks every node is the one it started, connects. */
    static LocalRedisCluster up() {
        File script = findScript();
        List<Integer> ports = freePorts();
        File dir = new File("target/redis-cluster-" + ports.get(0)).getAbsoluteFile();
        LocalRedisCluster cluster = null;
        try {
            run(script, ports, dir, "up");
            for (int port : ports) {
                OwnRedisServer.check(port, new File(dir, port + "/redis.pid").toPath());
            }
            cluster = new LocalRedisCluster(script, ports, dir);
            return cluster;
        } finally {
            if (cluster == null) {
                run(script, ports, dir, "down");
            }
        }
    }

    /** Three free ports whose cluster bus ports (+ 10000) are free as well. */
    private static List<Integer> freePorts() {
        List<Integer> ports = new ArrayList<>();
        while (ports.size() < 3) {
            int port = FreePort.next();
            if (port + 10000 <= 65535 && !ports.contains(port) && free(port + 10000)) {
                ports.add(port);
            }
        }
        return ports;
    }

    private static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket(port)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The value for {@code spring.data.redis.cluster.nodes}. */
    String nodesProperty() {
        return String.join(",", nodes());
    }

    private List<String> nodes() {
        return ports.stream().map(p -> "127.0.0.1:" + p).toList();
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
            run(script, ports, dir, "down");
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

    private static void run(File script, List<Integer> ports, File dir, String command) {
        try {
            ProcessBuilder builder = new ProcessBuilder(script.getPath(), command).redirectErrorStream(true);
            builder.environment()
                    .put(
                            "REDIS_CLUSTER_PORTS",
                            String.join(" ", ports.stream().map(String::valueOf).toList()));
            builder.environment().put("REDIS_CLUSTER_DIR", dir.getPath());
            Process p = builder.start();
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
