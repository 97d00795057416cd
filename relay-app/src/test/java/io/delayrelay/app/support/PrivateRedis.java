package io.delayrelay.app.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.faults.Shell;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.util.FileSystemUtils;

/**
 * A redis-server of one test's own, for what the shared one cannot give: its own {@code notify-keyspace-events},
 * ACL users, TLS, eviction settings, INFO commandstats that count only the test's relay, or a kill -9. Why this
 * class: every test that started its own server used to pick a fixed port and {@code --daemonize yes}, so a port
 * clash went unnoticed and the test talked to (and shut down) whatever server held the port. Here the port is free
 * (chosen by the OS), the server runs in the foreground as a child of the test JVM, and it is only trusted once the
 * server answering on the port reports this child's pid ({@code INFO server} process_id).
 */
public final class PrivateRedis implements AutoCloseable {

    private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
    private static final int START_ATTEMPTS = 3;

    private final Path dir;
    private final boolean ownDir;
    private final boolean tls;
    private final List<String> serverArgs;
    private final List<String> cliArgs;
    private int port;
    private Process process;
    private LettuceConnectionFactory factory;

    private PrivateRedis(Builder b, Path dir) {
        this.dir = dir;
        this.ownDir = b.dir == null;
        this.tls = b.tls;
        this.serverArgs = List.copyOf(b.serverArgs);
        this.cliArgs = List.copyOf(b.cliArgs);
    }

    /** A plain server with {@code notify-keyspace-events} set to {@code notify}, on a free port. */
    public static PrivateRedis start(String notify) {
        return builder().args("--notify-keyspace-events", notify).start();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Options of a private server; {@link #start()} picks the port. */
    public static final class Builder {
        private final List<String> serverArgs = new ArrayList<>();
        private final List<String> cliArgs = new ArrayList<>();
        private Path dir;
        private boolean tls;
        private int port;

        /** More redis-server arguments (after the defaults: no persistence, loopback, own dir and log). */
        public Builder args(String... args) {
            serverArgs.addAll(List.of(args));
            return this;
        }

        /** Arguments redis-cli needs to talk to this server (a password, --tls --cacert ...). */
        public Builder cliArgs(String... args) {
            cliArgs.addAll(List.of(args));
            return this;
        }

        /**
         * A port of its own (one a helper session was given on a shared machine); 0, the default, lets the OS choose a
         * free one.
         */
        public Builder port(int port) {
            this.port = port;
            return this;
        }

        /** Its working directory (kept on close); a fresh temp dir, deleted on close, otherwise. */
        public Builder dir(Path dir) {
            this.dir = dir;
            return this;
        }

        /** Listen on a TLS port only (the free port becomes --tls-port, --port is 0); pass the tls-* args too. */
        public Builder tlsOnly() {
            this.tls = true;
            return this;
        }

        /** Starts it on a free port and waits until it answers as itself; retries a port another process took. */
        public PrivateRedis start() {
            Path dir;
            try {
                dir = this.dir != null
                        ? Files.createDirectories(this.dir)
                        : Files.createTempDirectory("delay-relay-redis");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            PrivateRedis redis = new PrivateRedis(this, dir);
            IllegalStateException failure = null;
            for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
                redis.port = port > 0 ? port : FreePort.next();
                try {
                    redis.launch();
                    return redis;
                } catch (IllegalStateException e) {
                    redis.stopProcess();
                    if (failure == null) {
                        failure = e;
                    } else {
                        failure.addSuppressed(e);
                    }
                }
            }
            redis.close();
            throw failure;
        }
    }

    private void launch() {
        List<String> command = new ArrayList<>(List.of("redis-server", "--bind", "127.0.0.1"));
        if (tls) {
            command.addAll(List.of("--port", "0", "--tls-port", Integer.toString(port)));
        } else {
            command.addAll(List.of("--port", Integer.toString(port)));
        }
        command.addAll(List.of("--save", "", "--appendonly", "no", "--daemonize", "no"));
        command.addAll(List.of(
                "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString()));
        command.addAll(serverArgs);
        try {
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(
                            dir.resolve("redis.out").toFile()))
                    .start();
        } catch (IOException e) {
            throw new IllegalStateException(
                    "cannot run redis-server (apt-get install redis-server; these tests never skip)", e);
        }
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        String last = "";
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server on port " + port + " exited " + process.exitValue()
                        + " at start (port taken?): " + tail());
            }
            try {
                long answering = processId();
                if (answering == process.pid()) {
                    return;
                }
                throw new IllegalStateException("port " + port + " is answered by another redis-server (pid "
                        + answering + "), not the one this test started (pid " + process.pid() + ")");
            } catch (IllegalStateException e) {
                if (e.getMessage().contains("another redis-server")) {
                    throw e;
                }
                last = e.getMessage();
            }
            sleep(100);
        }
        throw new IllegalStateException("redis-server on port " + port + " did not answer within " + START_TIMEOUT
                + ": " + last + "; " + tail());
    }

    /** The pid the server on this port reports (INFO server process_id). */
    private long processId() {
        String info = cli("info", "server");
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("process_id:")) {
                return Long.parseLong(line.substring("process_id:".length()).trim());
            }
        }
        throw new IllegalStateException("no process_id in INFO server: " + info.strip());
    }

    private String tail() {
        try {
            Path log = dir.resolve("redis.log");
            List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    public int port() {
        return port;
    }

    public Path dir() {
        return dir;
    }

    /** The pid of the redis-server this test started (checked to be the one answering). */
    public long pid() {
        return process.pid();
    }

    /** redis-cli against this server, with the builder's cli arguments; fails when redis-cli fails. */
    public String cli(String... args) {
        List<String> command = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port)));
        command.addAll(cliArgs);
        command.addAll(List.of(args));
        return Shell.run(10, command.toArray(String[]::new));
    }

    /** A Lettuce factory for this (plain, password-less) server, made on first use and destroyed on close. */
    public synchronized LettuceConnectionFactory factory() {
        if (factory == null) {
            factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
            factory.afterPropertiesSet();
            factory.start();
        }
        return factory;
    }

    /** A connection to this server; close it after use. */
    public RedisConnection connection() {
        return factory().getConnection();
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

    /** SIGKILL of this server's process (no shutdown, no save): what a crash does. */
    public void kill9() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Starts the server again on the same port and directory (it reloads its AOF, if it has one). */
    public void restart() {
        launch();
    }

    private void stopProcess() {
        if (process == null) {
            return;
        }
        process.destroy(); // SIGTERM: redis-server shuts down (nothing to save)
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        try {
            if (factory != null) {
                factory.destroy();
            }
        } finally {
            stopProcess();
            if (ownDir) {
                FileSystemUtils.deleteRecursively(dir.toFile());
            }
        }
    }
}
