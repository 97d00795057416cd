package io.delayrelay.app.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;

/**
 * The throwaway 3-node RabbitMQ cluster of {@code scripts/rabbit-cluster.sh} (nodes rc1, rc2, rc3 on
 * 127.0.0.1:5681..5683, or the ports in RABBIT_CLUSTER_PORTS). Every operation goes through the script, so the test
 * and a person at a shell start, stop and inspect the nodes the same way. {@link #close()} takes the cluster down.
 */
final class RabbitCluster implements AutoCloseable {

    static final String HOST = "127.0.0.1";
    private static final String DEFAULT_PORTS = "5681 5682 5683";
    /** Three fresh nodes start and join in ~30 s on an idle machine; much longer under a shared build. */
    private static final long UP_TIMEOUT_SECONDS = 300;

    private static final long NODE_TIMEOUT_SECONDS = 180;

    private final Path script;
    private final List<Integer> ports;

    private RabbitCluster(Path script, List<Integer> ports) {
        this.script = script;
        this.ports = ports;
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
        String env = System.getenv("RABBIT_CLUSTER_PORTS");
        List<Integer> ports = Arrays.stream((env == null || env.isBlank() ? DEFAULT_PORTS : env)
                        .trim()
                        .split("\\s+"))
                .map(Integer::valueOf)
                .toList();
        RabbitCluster cluster = new RabbitCluster(script, ports);
        try {
            cluster.run(UP_TIMEOUT_SECONDS, "up");
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

    /** Node name of the i-th port, as the script names it: rc1, rc2, ... */
    String node(int index) {
        if (index < 0 || index >= ports.size()) {
            throw new IllegalArgumentException("no node " + index + " in a cluster of " + ports.size());
        }
        return "rc" + (index + 1);
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
        String[] command =
                Stream.concat(Stream.of(script.toString()), Arrays.stream(args)).toArray(String[]::new);
        return Shell.run(timeoutSeconds, command);
    }

    /** Stops every node and deletes the cluster, keeping the nodes' logs in target/faults/rabbit-cluster. */
    @Override
    public void close() {
        Path logs = Path.of("target", "faults", "rabbit-cluster").toAbsolutePath();
        Shell.run(NODE_TIMEOUT_SECONDS, "env", "RABBIT_CLUSTER_LOGS_TO=" + logs, script.toString(), "down");
    }
}
