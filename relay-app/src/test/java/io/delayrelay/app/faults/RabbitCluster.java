package io.delayrelay.app.faults;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.delayrelay.app.support.FreePort;

/**
 * The throwaway 3-node RabbitMQ cluster of {@code scripts/rabbit-cluster.sh}, on free AMQP ports (their distribution
 * ports, + 20000, free too), with node names and a directory under target/ of this run's own: node names are
 * host-wide (epmd), so two work trees running the fault suite at once need different ones. Each port must then be
 * answered by a node of this run (the {@code cluster_name} server property defaults to a node name), so a port
 * another broker answers on fails the test. Every operation goes through the script, so the test and a person at a shell
 * start, stop and inspect the nodes the same way. {@link #close()} takes the cluster down.
 */
final class RabbitCluster implements AutoCloseable {

    static final String HOST = "127.0.0.1";
    /** Three fresh nodes start and join in ~30 s on an idle machine; much longer under a shared build. */
    private static final long UP_TIMEOUT_SECONDS = 300;

    private static final long NODE_TIMEOUT_SECONDS = 180;

    private final Path script;
    private final List<Integer> ports;
    private final String prefix;
    private final Path dir;

    private RabbitCluster(Path script, List<Integer> ports, String prefix, Path dir) {
        this.script = script;
        this.ports = ports;
        this.prefix = prefix;
        this.dir = dir;
    }

    /**
     * Starts the cluster (or finds it up). Fails with the script's own message when rabbitmq-server is not installed
     * or a port is taken: these tests never skip.
     */
    static RabbitCluster up() {
        Path script = Stream.of(Path.of("..", "scripts", "rabbit-cluster.sh"), Path.of("scripts", "rabbit-cluster.sh"))
                .filter(Files::isExecutable)
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("scripts/rabbit-cluster.sh not found from "
                        + Path.of("").toAbsolutePath()
                        + ": run the fault suite from the repository (scripts/faults.sh)"));
        List<Integer> ports = new ArrayList<>();
        while (ports.size() < 3) {
            int port = FreePort.next();
            if (port + 20000 <= 65535 && !ports.contains(port) && free(port + 20000)) {
                ports.add(port);
            }
        }
        String prefix = "rc" + ports.get(0) + "n";
        Path dir = Path.of("target", "faults", "rabbit-cluster-" + prefix).toAbsolutePath();
        RabbitCluster cluster = new RabbitCluster(script, ports, prefix, dir);
        try {
            cluster.run(UP_TIMEOUT_SECONDS, "up");
            for (int i = 0; i < ports.size(); i++) {
                cluster.checkOwnNode(i);
            }
        } catch (RuntimeException e) {
            // Half-started nodes would make the next run refuse to start: take down whatever this run started.
            try {
                cluster.close();
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
        return cluster;
    }

    private static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket(port)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The broker on the i-th port must belong to this cluster: its cluster name (a node name of this run's unique
     * prefix, by default the first node's or its own) shows it.
     */
    private void checkOwnNode(int index) {
        try (Connection c = connect(index, "rabbit-cluster-check")) {
            Object name = c.getServerProperties().get("cluster_name");
            if (name == null || !name.toString().matches(Pattern.quote(prefix) + "[0-9]+@.*")) {
                throw new IllegalStateException(HOST + ":" + port(index) + " is answered by RabbitMQ '" + name
                        + "', not by a node of the cluster this test started (" + prefix + "1..)");
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot connect to node " + node(index), e);
        }
    }

    /** Node name of the i-th port, as the script names it: {prefix}1, {prefix}2, ... */
    String node(int index) {
        if (index < 0 || index >= ports.size()) {
            throw new IllegalArgumentException("no node " + index + " in a cluster of " + ports.size());
        }
        return prefix + (index + 1);
    }

    int port(int index) {
        node(index);
        return ports.get(index);
    }

    /** The value for {@code spring.rabbitmq.addresses}: every node, in node order. */
    String addresses() {
        return ports.stream().map(p -> HOST + ":" + p).collect(Collectors.joining(","));
    }

    /** A plain AMQP connection to one node (guest/guest on loopback). */
    Connection connect(int index, String name) throws IOException {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(HOST);
        factory.setPort(port(index));
        try {
            return factory.newConnection(name);
        } catch (TimeoutException e) {
            throw new IOException("connecting to " + node(index) + " timed out", e);
        }
    }

    /** AMQP client connections one node holds right now (rabbitmqctl list_connections). */
    int connectionsOn(int index) {
        String out = ctl(index, "-q", "list_connections", "pid");
        return (int) out.lines().filter(l -> !l.isBlank()).count();
    }

    /** {@code rabbitmqctl -q list_queues name leader members} as seen by one node. */
    String queueInfo(int index, String queue) {
        return ctl(index, "-q", "list_queues", "name", "type", "leader", "members")
                .lines()
                .filter(l -> l.startsWith(queue))
                .findFirst()
                .orElse("(queue " + queue + " not listed)");
    }

    /** Stops one node (rabbitmqctl stop): its connections close, its queue replicas go away. */
    void stopNode(int index) {
        run(NODE_TIMEOUT_SECONDS, "stop-node", node(index));
    }

    void startNode(int index) {
        run(NODE_TIMEOUT_SECONDS, "start-node", node(index));
    }

    String ctl(int index, String... args) {
        String[] command = Stream.concat(Stream.of("ctl", node(index)), Arrays.stream(args))
                .toArray(String[]::new);
        return run(60, command);
    }

    private String run(long timeoutSeconds, String... args) {
        return Shell.run(timeoutSeconds, command(args));
    }

    /** The script with this cluster's ports, node names and directory. */
    private String[] command(String... args) {
        Stream<String> env = Stream.of(
                "env",
                "RABBIT_CLUSTER_PORTS=" + ports.stream().map(String::valueOf).collect(Collectors.joining(" ")),
                "RABBIT_CLUSTER_NODE_PREFIX=" + prefix,
                "RABBIT_CLUSTER_DIR=" + dir);
        return Stream.of(env, Stream.of(script.toString()), Arrays.stream(args))
                .flatMap(s -> s)
                .toArray(String[]::new);
    }

    /** Stops every node and deletes the cluster, keeping the nodes' logs in target/faults/rabbit-cluster. */
    @Override
    public void close() {
        Path logs = Path.of("target", "faults", "rabbit-cluster").toAbsolutePath();
        String[] down = Stream.concat(
                        Stream.of("env", "RABBIT_CLUSTER_LOGS_TO=" + logs), Arrays.stream(command("down")))
                .toArray(String[]::new);
        Shell.run(NODE_TIMEOUT_SECONDS, down);
    }
}
