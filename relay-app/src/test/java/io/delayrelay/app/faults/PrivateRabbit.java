package io.delayrelay.app.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.delayrelay.app.support.FreePort;

import static org.awaitility.Awaitility.await;

/**
 * A RabbitMQ node of one test's own, for a test that must stop the broker: stopping the shared one on 5672 would
 * break every other test and helper using it. Own node name, free AMQP and distribution ports, own cookie, config,
 * data and logs under {@code target/faults/rabbit-<node>/} (the logs stay after {@link #close()}). Started in the
 * foreground as a child of the test JVM, and only trusted once the broker answering on the port calls itself by
 * this node's unique name (the {@code cluster_name} server property, which defaults to the node name).
 */
final class PrivateRabbit implements AutoCloseable {

    static final String HOST = "127.0.0.1";
    /** A fresh node boots in ~10 s on an idle machine; much longer under a shared build. */
    private static final Duration START_TIMEOUT = Duration.ofMinutes(3);

    private final String name;
    private final String node;
    private final int port;
    private final Path dir;
    private final Path bin;
    private final Process process;

    private PrivateRabbit(String name, int port, Path dir, Path bin, Process process) {
        this.name = name;
        this.node = name + "@localhost";
        this.port = port;
        this.dir = dir;
        this.bin = bin;
        this.process = process;
    }

    /** Starts a node and waits until it is up and proven to be this one. Fails (never skips) without RabbitMQ. */
    static PrivateRabbit start(String prefix) throws IOException {
        Path bin = binDir();
        String name = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
        int port = FreePort.next();
        int distPort = FreePort.next();
        Path dir = Path.of("target", "faults", "rabbit-" + name).toAbsolutePath();
        Files.createDirectories(dir.resolve("mnesia"));
        Files.createDirectories(dir.resolve("log"));
        Files.writeString(dir.resolve("rabbitmq-env.conf"), "");
        Files.writeString(dir.resolve("enabled_plugins"), "[].\n");
        Files.writeString(dir.resolve("advanced.config"), "[].\n");
        Files.writeString(
                dir.resolve("rabbitmq.conf"),
                String.join(
                        "\n",
                        "listeners.tcp.1 = " + HOST + ":" + port,
                        "loopback_users.guest = true",
                        "# a small node: it shares the machine with the build and other tests",
                        "vm_memory_high_watermark.absolute = 512MB",
                        "disk_free_limit.absolute = 50MB",
                        "log.console = false",
                        "log.file.level = info",
                        ""));
        Path cookie = dir.resolve(".erlang.cookie");
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        Files.writeString(cookie, HexFormat.of().formatHex(secret));
        Files.setPosixFilePermissions(cookie, PosixFilePermissions.fromString("r--------"));

        String node = name + "@localhost";
        ProcessBuilder builder = new ProcessBuilder(
                        bin.resolve("rabbitmq-server").toString())
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("log").resolve("startup.log").toFile());
        Map<String, String> env = builder.environment();
        env.putAll(environment(node, port, dir));
        env.put("RABBITMQ_DIST_PORT", Integer.toString(distPort));
        // one scheduler that sleeps when idle instead of spinning: the test machine has two cores for many processes
        env.put(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "+S 1:1 +A 4 +sbwt none +sbwtdcpu none +sbwtdio none -kernel inet_dist_use_interface {127,0,0,1}");
        PrivateRabbit rabbit = new PrivateRabbit(name, port, dir, bin, builder.start());
        try {
            rabbit.awaitUp();
        } catch (RuntimeException | Error e) {
            rabbit.close();
            throw e;
        }
        return rabbit;
    }

    private static Map<String, String> environment(String node, int port, Path dir) {
        return Map.ofEntries(
                Map.entry("HOME", dir.toString()),
                Map.entry("RABBITMQ_NODENAME", node),
                Map.entry("RABBITMQ_NODE_IP_ADDRESS", HOST),
                Map.entry("RABBITMQ_NODE_PORT", Integer.toString(port)),
                Map.entry(
                        "RABBITMQ_CONF_ENV_FILE",
                        dir.resolve("rabbitmq-env.conf").toString()),
                Map.entry("RABBITMQ_CONFIG_FILE", dir.resolve("rabbitmq.conf").toString()),
                Map.entry(
                        "RABBITMQ_ADVANCED_CONFIG_FILE",
                        dir.resolve("advanced.config").toString()),
                Map.entry(
                        "RABBITMQ_ENABLED_PLUGINS_FILE",
                        dir.resolve("enabled_plugins").toString()),
                Map.entry("RABBITMQ_MNESIA_BASE", dir.resolve("mnesia").toString()),
                Map.entry("RABBITMQ_LOG_BASE", dir.resolve("log").toString()),
                Map.entry("RABBITMQ_PID_FILE", dir.resolve("rabbit.pid").toString()),
                Map.entry("ERL_EPMD_ADDRESS", HOST));
    }

    /** Debian's /usr/sbin wrappers switch to the rabbitmq user and its cookie: use the scripts they wrap. */
    private static Path binDir() {
        Path debian = Path.of("/usr/lib/rabbitmq/bin");
        if (Files.isExecutable(debian.resolve("rabbitmq-server"))) {
            return debian;
        }
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "rabbitmq-server"))) {
                return Path.of(dir);
            }
        }
        throw new IllegalStateException("rabbitmq-server is not installed (apt-get install rabbitmq-server); "
                + "the broker outage test starts a RabbitMQ node of its own and never skips");
    }

    private void awaitUp() {
        await().atMost(START_TIMEOUT)
                .pollInterval(Duration.ofMillis(500))
                .ignoreExceptions()
                .until(() -> {
                    if (!process.isAlive()) {
                        throw new IllegalStateException("RabbitMQ node " + node + " exited " + process.exitValue()
                                + "; see " + dir.resolve("log"));
                    }
                    return answersAsThisNode();
                });
        ctl("await_startup");
    }

    /** True when the broker on this node's AMQP port is this node (not another process that took the port). */
    private boolean answersAsThisNode() throws Exception {
        try (Connection c = connect("private-rabbit-check")) {
            // cluster_name defaults to the node name with the host's own name: "<name>@<hostname>"
            Object clusterName = c.getServerProperties().get("cluster_name");
            if (clusterName == null || !clusterName.toString().startsWith(name + "@")) {
                throw new IllegalStateException("port " + port + " is answered by RabbitMQ '" + clusterName
                        + "', not by the node this test started (" + node + ")");
            }
            return true;
        }
    }

    String node() {
        return node;
    }

    int port() {
        return port;
    }

    /**
     * A plain AMQP connection (guest/guest on loopback) without automatic recovery: a test that stops the node makes
     * a fresh connection after it. A recovering one raced the test's abort of it and re-registered its consumer once
     * (CI, 2026-11-30): the one message the broker handed that consumer never reached the test.
     */
    Connection connect(String name) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(HOST);
        factory.setPort(port);
        factory.setAutomaticRecoveryEnabled(false);
        return factory.newConnection(name);
    }

    /** rabbitmqctl against this node, with its cookie. */
    String ctl(String... args) {
        List<String> command = new ArrayList<>();
        command.add("env");
        environment(node, port, dir).forEach((k, v) -> command.add(k + "=" + v));
        command.add(bin.resolve("rabbitmqctl").toString());
        command.add("-n");
        command.add(node);
        command.addAll(List.of(args));
        return Shell.run(180, command.toArray(String[]::new));
    }

    /** Stops the node (rabbitmqctl stop; SIGTERM, then SIGKILL of its own process if that hangs). */
    @Override
    public void close() {
        try {
            if (process.isAlive()) {
                ctl("stop");
            }
        } catch (RuntimeException e) {
            System.out.println("rabbitmqctl stop of " + node + " failed: " + e.getMessage());
        }
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroy();
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
            // the Erlang VM of this node only: its pid from its own pid file, and only while it runs as this node
            Path pidFile = dir.resolve("rabbit.pid");
            if (Files.exists(pidFile)) {
                long pid = Long.parseLong(Files.readString(pidFile).trim());
                ProcessHandle.of(pid)
                        .filter(h -> h.info().commandLine().orElse("").contains(node))
                        .ifPresent(ProcessHandle::destroyForcibly);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | NumberFormatException e) {
            System.out.println("could not check the pid of " + node + ": " + e);
        }
    }
}
