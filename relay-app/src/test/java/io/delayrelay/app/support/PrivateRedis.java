package io.delayrelay.app.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import io.delayrelay.app.faults.Shell;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.util.FileSystemUtils;

import static org.awaitility.Awaitility.await;

/**
 * A redis-server of one test's own, for what the shared one cannot give: its own {@code notify-keyspace-events}, or
 * INFO commandstats that count only the test's relay. Nothing kept on disk; shut down and removed on close.
 */
public final class PrivateRedis implements AutoCloseable {

    private final int port;
    private final Path dir;
    private final LettuceConnectionFactory factory;

    private PrivateRedis(int port, Path dir, LettuceConnectionFactory factory) {
        this.port = port;
        this.dir = dir;
        this.factory = factory;
    }

    /** Starts redis-server on {@code port} with {@code notify-keyspace-events} set to {@code notify}. */
    public static PrivateRedis start(int port, String notify) throws Exception {
        Path dir = Files.createTempDirectory("delay-relay-redis-" + port);
        Shell.run(
                20,
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                Integer.toString(port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--notify-keyspace-events",
                notify,
                "--dir",
                dir.toString(),
                "--logfile",
                dir.resolve("redis.log").toString());
        LettuceConnectionFactory factory =
                new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
        factory.afterPropertiesSet();
        factory.start();
        PrivateRedis redis = new PrivateRedis(port, dir, factory);
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> {
            try (RedisConnection c = redis.connection()) {
                return "PONG".equals(c.ping());
            }
        });
        return redis;
    }

    public int port() {
        return port;
    }

    /** A connection to this server; close it after use. */
    public RedisConnection connection() {
        return factory.getConnection();
    }

    /** Redis time now, epoch ms. */
    public long nowMs() {
        try (RedisConnection c = connection()) {
            return c.serverCommands().time();
        }
    }

    /** Calls of a command on this server so far (INFO commandstats). */
    public long calls(String command) {
        try (RedisConnection c = connection()) {
            String stat = c.serverCommands().info("commandstats").getProperty("cmdstat_" + command);
            if (stat == null) {
                return 0;
            }
            String calls = stat.substring(stat.indexOf("calls=") + 6);
            return Long.parseLong(calls.substring(0, calls.indexOf(',')));
        }
    }

    @Override
    public void close() {
        factory.destroy();
        Shell.run(10, "redis-cli", "-p", Integer.toString(port), "shutdown", "nosave");
        FileSystemUtils.deleteRecursively(dir.toFile());
    }
}
