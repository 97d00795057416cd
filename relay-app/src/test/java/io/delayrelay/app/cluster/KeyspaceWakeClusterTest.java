package io.delayrelay.app.cluster;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadLocalRandom;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.faults.Shell;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.util.FileSystemUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Finding 4 of the engine review (2026-11-24) on a Redis Cluster of this test's own (free ports): a master added
 * after the relay subscribed, and given slots, has no notification flags; the relay notices (WARN, polling), and
 * once the flags are set there it follows them (INFO) and hears that master's writes (Lettuce alone does not
 * subscribe nodes added later). Not a timing test: its bounds are seconds wide (max-idle and the safety sweep are
 * 10 min, so a pick-up within 5 s can only come from a notification), and it waits for the relay's subscription on
 * the added master instead of a fixed pause.
 */
@ExtendWith(OutputCaptureExtension.class)
class KeyspaceWakeClusterTest {

    private static final int SHARDS = 64;

    private final RelayTestKit kit = new RelayTestKit();
    private final List<Integer> ports = List.of(freePort(), freePort(), freePort());
    private final int added = freePort();
    private Path dir;

    @AfterEach
    void cleanUp() {
        kit.close();
        try {
            Shell.run(10, "redis-cli", "-p", Integer.toString(added), "shutdown", "nosave");
        } catch (RuntimeException ignored) {
            // not started
        }
        if (dir != null) {
            cluster("down");
            FileSystemUtils.deleteRecursively(dir.toFile());
        }
    }

    @Test
    void aMasterAddedLaterWithoutTheFlagsIsNoticedAndOnceSetItsWritesWakeTheRelay(CapturedOutput output)
            throws Exception {
        dir = Files.createTempDirectory("delay-relay-ks-cluster");
        cluster("up");
        ports.forEach(p -> cli(p, "config", "set", "notify-keyspace-events", "Kz"));
        String business = kit.business("kscluster");
        String exchange = kit.exchange("kscluster");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> props = kit.baseProperties();
        props.remove("spring.data.redis.host");
        props.remove("spring.data.redis.port");
        props.put(
                "spring.data.redis.cluster.nodes",
                String.join(",", ports.stream().map(p -> "127.0.0.1:" + p).toList()));
        props.put("relay.wake.safety-sweep", "10m");
        RelayTestKit.business(props, business, exchange, "due", "shards", SHARDS, "max-idle", "10m", "threads", 1);
        kit.startRelay(props);
        await().atMost(Duration.ofSeconds(20)).until(() -> output.getAll().contains("keyspace notifications on"));

        addMasterWithSlots();
        await().atMost(Duration.ofSeconds(30)).until(() -> output.getAll().contains("keyspace notifications stopped"));
        cli(added, "config", "set", "notify-keyspace-events", "Kz");
        await().atMost(Duration.ofSeconds(5))
                .until(() -> output.getAll().contains("keyspace notifications are on again"));

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        int shard = shardServedBy(added, keys);
        // the relay hears the added master once it subscribed that shard's keyspace channel there (keyspace events
        // are published on the node that holds the key only)
        String channel = "__keyspace@0__:" + keys.shard(shard);
        await("the relay subscribed " + channel + " on the added master")
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> subscribers(added, channel) > 0);
        long due = Long.parseLong(cli(added, "time").trim().split("\\s+")[0]) * 1000;
        cli(added, "zadd", keys.shard(shard), Long.toString(due), "on the added master");
        List<Received> all = RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ZERO);
        assertThat(all)
                .as("woken by the added master's notification (max-idle and the safety sweep are 10 min)")
                .extracting(Received::text)
                .containsExactly("on the added master");
    }

    /** Starts a fourth node, joins it as a master and moves 4,000 of the first node's slots to it. */
    private void addMasterWithSlots() throws IOException {
        Path nodeDir = Files.createDirectories(dir.resolve("added"));
        Shell.run(
                20,
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                Integer.toString(added),
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                nodeDir.resolve("nodes.conf").toString(),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                nodeDir.toString(),
                "--logfile",
                nodeDir.resolve("redis.log").toString());
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> cli(added, "ping")
                .contains("PONG"));
        Shell.run(60, "redis-cli", "--cluster", "add-node", "127.0.0.1:" + added, "127.0.0.1:" + ports.get(0));
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> Shell.run(
                        20, "redis-cli", "--cluster", "check", "127.0.0.1:" + ports.get(0))
                .contains("[OK] All 16384 slots covered"));
        String from = cli(ports.get(0), "cluster", "myid").trim();
        String to = cli(added, "cluster", "myid").trim();
        // the cluster bus spreads the new node by gossip: a slot can move only once every node knows it
        await().atMost(Duration.ofSeconds(30)).until(() -> ports.stream()
                .allMatch(p -> cli(p, "cluster", "nodes").contains(to)));
        // and a slot can move to it only once it knows the whole slot map itself (else it answers CLUSTERDOWN to
        // the MIGRATE: seen once on a loaded machine)
        List<String> others =
                ports.stream().map(p -> cli(p, "cluster", "myid").trim()).toList();
        await().atMost(Duration.ofSeconds(30))
                .until(() -> cli(added, "cluster", "info").contains("cluster_state:ok")
                        && others.stream()
                                .allMatch(id -> cli(added, "cluster", "nodes").contains(id)));
        Shell.run(
                120,
                "redis-cli",
                "--cluster",
                "reshard",
                "127.0.0.1:" + ports.get(0),
                "--cluster-from",
                from,
                "--cluster-to",
                to,
                "--cluster-slots",
                "4000",
                "--cluster-yes");
    }

    /** A shard whose key the added master serves. */
    private int shardServedBy(int port, DelayQueueKeys keys) {
        for (int shard = 0; shard < SHARDS; shard++) {
            if (!cli(port, "zscore", keys.shard(shard), "nothing").contains("MOVED")) {
                return shard;
            }
        }
        throw new AssertionError("no shard key is served by the added master");
    }

    private void cluster(String command) {
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

    /** Clients subscribed to {@code channel} on the node at {@code port} ({@code PUBSUB NUMSUB}). */
    private static long subscribers(int port, String channel) {
        String[] lines = cli(port, "pubsub", "numsub", channel).trim().split("\\s+");
        return Long.parseLong(lines[lines.length - 1]);
    }

    private static String cli(int port, String... args) {
        String[] command = new String[3 + args.length];
        command[0] = "redis-cli";
        command[1] = "-p";
        command[2] = Integer.toString(port);
        System.arraycopy(args, 0, command, 3, args.length);
        return Shell.run(20, command);
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
        throw new UncheckedIOException(new IOException("no free port pair found"));
    }
}
