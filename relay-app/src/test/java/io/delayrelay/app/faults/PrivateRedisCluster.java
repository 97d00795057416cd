package io.delayrelay.app.faults;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import io.delayrelay.app.support.OwnRedisServer;
import io.lettuce.core.MigrateArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.util.FileSystemUtils;

import static org.awaitility.Awaitility.await;

/**
 * A Redis Cluster of one fault test's own: three masters from {@code scripts/redis-cluster.sh} on free ports (each
 * with its bus port, + 10000, free too), more nodes added as empty masters or as replicas, and the moves an operator
 * makes: a slot migrated key by key ({@code CLUSTER SETSLOT IMPORTING/MIGRATING}, {@code MIGRATE}, {@code SETSLOT
 * NODE}, what {@code redis-cli --cluster reshard} does, here at a pace the test chooses) and a replica promoted with
 * {@code CLUSTER FAILOVER}. Stopped and deleted on close.
 */
final class PrivateRedisCluster implements AutoCloseable {

    private final Path dir;
    private final List<Integer> ports = new ArrayList<>();
    private final List<Integer> added = new ArrayList<>();
    private final Map<Integer, RedisClient> clients = new HashMap<>();
    private final Map<Integer, StatefulRedisConnection<String, String>> connections = new HashMap<>();
    private LettuceConnectionFactory factory;

    private PrivateRedisCluster(Path dir) {
        this.dir = dir;
    }

    /** Three masters on free ports, all 16,384 slots covered. */
    static PrivateRedisCluster up(String name) throws IOException {
        Path dir = Files.createTempDirectory("delay-relay-" + name);
        PrivateRedisCluster cluster = new PrivateRedisCluster(dir);
        while (cluster.ports.size() < 3) {
            int port = freePort();
            if (!cluster.ports.contains(port)) {
                cluster.ports.add(port);
            }
        }
        try {
            cluster.script("up");
            for (int port : cluster.ports) {
                OwnRedisServer.check(port, dir.resolve("cluster").resolve(port + "/redis.pid"));
            }
        } catch (RuntimeException e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** The three first masters' ports. */
    List<Integer> ports() {
        return List.copyOf(ports);
    }

    /** The value for {@code spring.data.redis.cluster.nodes}: the three first masters. */
    String nodesProperty() {
        return String.join(",", ports.stream().map(p -> "127.0.0.1:" + p).toList());
    }

    /**
     * A factory for the test's own reads and writes: it follows MOVED to nodes added later (topology refreshed on
     * redirects, any node of the cluster allowed).
     */
    synchronized LettuceConnectionFactory factory() {
        if (factory == null) {
            ClusterClientOptions options = ClusterClientOptions.builder()
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enableAllAdaptiveRefreshTriggers()
                            .build())
                    .validateClusterNodeMembership(false)
                    .build();
            factory = new LettuceConnectionFactory(
                    new RedisClusterConfiguration(List.of(nodesProperty().split(","))),
                    LettuceClientConfiguration.builder().clientOptions(options).build());
            factory.afterPropertiesSet();
            factory.start();
        }
        return factory;
    }

    /** Commands on one node (a connection of its own, kept until close). */
    synchronized RedisCommands<String, String> node(int port) {
        return connections
                .computeIfAbsent(
                        port, p -> clients.computeIfAbsent(p, q -> RedisClient.create(RedisURI.create("127.0.0.1", q)))
                                .connect())
                .sync();
    }

    String id(int port) {
        return node(port).clusterMyId();
    }

    /** The port of the master serving the slot, as the node on {@code askPort} sees it. */
    int masterOf(int slot, int askPort) {
        for (String line : node(askPort).clusterNodes().split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length < 9 || !f[2].contains("master") || f[2].contains("fail")) {
                continue;
            }
            for (int i = 8; i < f.length; i++) {
                if (f[i].startsWith("[")) {
                    continue;
                }
                String[] range = f[i].split("-");
                int from = Integer.parseInt(range[0]);
                int to = range.length > 1 ? Integer.parseInt(range[1]) : from;
                if (slot >= from && slot <= to) {
                    return Integer.parseInt(f[1].substring(f[1].indexOf(':') + 1, f[1].indexOf('@')));
                }
            }
        }
        throw new IllegalStateException("no master serves slot " + slot);
    }

    /** Starts a node and joins it as a master without slots; waits until every node knows it. */
    int addMaster() throws IOException {
        int port = startNode();
        Shell.run(60, "redis-cli", "--cluster", "add-node", "127.0.0.1:" + port, "127.0.0.1:" + ports.get(0));
        awaitJoined(port);
        return port;
    }

    /** Starts a node and joins it as a replica of the master on {@code masterPort}; waits until it is in sync. */
    int addReplica(int masterPort) throws IOException {
        int port = startNode();
        Shell.run(
                60,
                "redis-cli",
                "--cluster",
                "add-node",
                "127.0.0.1:" + port,
                "127.0.0.1:" + ports.get(0),
                "--cluster-slave",
                "--cluster-master-id",
                id(masterPort));
        awaitJoined(port);
        await("replica " + port + " in sync")
                .atMost(Duration.ofSeconds(60))
                .ignoreExceptions()
                .until(() -> node(port).info("replication").contains("master_link_status:up"));
        return port;
    }

    private int startNode() throws IOException {
        int port;
        do {
            port = freePort();
        } while (ports.contains(port) || added.contains(port));
        Path nodeDir = Files.createDirectories(dir.resolve("node-" + port));
        Shell.run(
                20,
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                Integer.toString(port),
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                nodeDir.resolve("nodes.conf").toString(),
                "--cluster-node-timeout",
                "5000",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                nodeDir.toString(),
                "--pidfile",
                nodeDir.resolve("redis.pid").toString(),
                "--logfile",
                nodeDir.resolve("redis.log").toString());
        added.add(port);
        int p = port;
        Path pidFile = nodeDir.resolve("redis.pid");
        // our server, not another test's that took the port first (its shutdown at close would hit that one)
        await("redis-server of " + nodeDir + " answering on " + port)
                .atMost(Duration.ofSeconds(10))
                .ignoreExceptions()
                .until(() -> OwnRedisServer.answers(p, pidFile));
        return port;
    }

    /** Gossip: every node knows the new one, and it knows every node and the whole slot map. */
    private void awaitJoined(int port) {
        String newId = id(port);
        List<Integer> all = new ArrayList<>(ports);
        all.addAll(added);
        await("node " + port + " joined")
                .atMost(Duration.ofSeconds(60))
                .ignoreExceptions()
                .until(() -> all.stream().allMatch(p -> node(p).clusterNodes().contains(newId))
                        && node(port).clusterInfo().contains("cluster_state:ok")
                        && all.stream().allMatch(p -> node(port).clusterNodes().contains(id(p))));
    }

    /** Opens a slot's migration: IMPORTING on the target, MIGRATING on the source (the order redis-cli uses). */
    void beginMigration(int slot, int from, int to) {
        node(to).clusterSetSlotImporting(slot, id(from));
        node(from).clusterSetSlotMigrating(slot, id(to));
    }

    /** Moves at most {@code max} keys of the slot (one MIGRATE each); returns how many moved. */
    int migrateKeys(int slot, int from, int to, int max) {
        List<String> keys = node(from).clusterGetKeysInSlot(slot, max);
        for (String key : keys) {
            node(from).migrate("127.0.0.1", to, 0, 10_000, MigrateArgs.Builder.keys(key));
        }
        return keys.size();
    }

    /** Keys of the slot still on the source. */
    long keysLeft(int slot, int from) {
        return node(from).clusterCountKeysInSlot(slot);
    }

    /** Closes a slot's migration: the slot belongs to the target, told to the target, the source and the others. */
    void endMigration(int slot, int from, int to) {
        String target = id(to);
        node(to).clusterSetSlotNode(slot, target);
        node(from).clusterSetSlotNode(slot, target);
        for (int port : ports) {
            if (port != to && port != from) {
                node(port).clusterSetSlotNode(slot, target);
            }
        }
    }

    /** {@code CLUSTER FAILOVER} on a replica: it becomes the master of its master's slots (no data lost). */
    void failover(int replicaPort) {
        node(replicaPort).clusterFailover(false);
    }

    private void script(String command) {
        File script = new File("../scripts/redis-cluster.sh").canExecute()
                ? new File("../scripts/redis-cluster.sh")
                : new File("scripts/redis-cluster.sh");
        Shell.run(
                120,
                "env",
                "REDIS_CLUSTER_PORTS="
                        + String.join(" ", ports.stream().map(String::valueOf).toList()),
                "REDIS_CLUSTER_DIR=" + dir.resolve("cluster"),
                script.getAbsolutePath(),
                command);
    }

    @Override
    public void close() {
        try {
            if (factory != null) {
                factory.destroy();
            }
            connections.values().forEach(StatefulRedisConnection::close);
            clients.values().forEach(RedisClient::shutdown);
        } finally {
            for (int port : added) {
                try {
                    if (!OwnRedisServer.answers(
                            port, dir.resolve("node-" + port).resolve("redis.pid"))) {
                        continue;
                    }
                    Shell.run(10, "redis-cli", "-p", Integer.toString(port), "shutdown", "nosave");
                } catch (RuntimeException ignored) {
                    // already gone
                }
            }
            try {
                script("down");
            } finally {
                FileSystemUtils.deleteRecursively(dir.toFile());
            }
        }
    }

    /** A port free now whose cluster bus port (+10000) is free too: below 30000, so the bus port exists. */
    private static int freePort() {
        for (int attempt = 0; attempt < 100; attempt++) {
            int port = 20_000 + ThreadLocalRandom.current().nextInt(10_000);
            try (ServerSocket a = new ServerSocket(port);
                    ServerSocket b = new ServerSocket(port + 10_000)) {
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IllegalStateException("no free port pair found");
    }
}
