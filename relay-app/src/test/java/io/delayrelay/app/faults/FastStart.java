package io.delayrelay.app.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.support.TestServices;

/**
 * How {@link RelayProcess} starts the exec jar cheaply: extracted with Spring Boot's own tool ({@code java
 * -Djarmode=tools -jar relay-app-*-exec.jar extract}) and run with a class data sharing archive of the classes a
 * start-up loads. The archive is made once per build of the jar (a training run that stops after the context
 * refresh), under target/relay-cds/, shared by every test JVM of the build (a file lock keeps two forks from making
 * it at once). On this 2-core machine a relay start costs 2.3 s of CPU this way, against 5.8 s for {@code java -jar}
 * (both C1) and 10.4 s with C2: the suite starts about 50 relays, several at once.
 *
 * <p>The classes are the exec jar's, byte for byte; only the launcher differs (a plain class path instead of the jar's
 * nested jars). ExecJarIT starts {@code java -jar} on the exec jar itself.
 */
final class FastStart {

    private static List<String> launch;

    private FastStart() {}

    /** The JVM options and {@code -jar} arguments that start the relay: made once per JVM and build of the jar. */
    static synchronized List<String> launch() throws IOException {
        if (launch == null) {
            launch = prepare(RelayProcess.execJar().toAbsolutePath());
        }
        return launch;
    }

    private static List<String> prepare(Path execJar) throws IOException {
        Path root = Files.createDirectories(execJar.getParent().resolve("relay-cds"));
        String build = Files.getLastModifiedTime(execJar).toMillis() + "-" + Files.size(execJar);
        Path dir = root.resolve(build);
        Path archive = dir.resolve("relay.jsa");
        Path jar = dir.resolve("app").resolve(execJar.getFileName());
        try (FileChannel channel =
                        FileChannel.open(root.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                FileLock ignored = channel.lock()) {
            if (!Files.exists(archive)) {
                run(
                        "extract",
                        List.of(
                                "-Djarmode=tools",
                                "-jar",
                                execJar.toString(),
                                "extract",
                                "--destination",
                                dir.resolve("app").toString(),
                                "--force"), // over what a build stopped mid-training left
                        dir);
                Path training = dir.resolve("relay.jsa.tmp");
                List<String> args = new ArrayList<>(List.of(
                        "-Xmx384m",
                        "-XX:+UseSerialGC",
                        RelayProcess.C1,
                        "-XX:ArchiveClassesAtExit=" + training,
                        "-Dspring.context.exit=onRefresh",
                        "-jar",
                        jar.toString(),
                        "--spring.main.banner-mode=off",
                        "--server.port=0",
                        "--management.server.port=0",
                        "--spring.data.redis.host=" + TestServices.redis().host(),
                        "--spring.data.redis.port=" + TestServices.redis().port(),
                        "--spring.rabbitmq.host=" + TestServices.rabbit().host(),
                        "--spring.rabbitmq.port=" + TestServices.rabbit().port(),
                        "--relay.businesses.cds-training.exchange=amq.direct",
                        "--relay.businesses.cds-training.routing-key=cds-training"));
                run("training run", args, dir);
                if (!Files.exists(training)) {
                    throw new IllegalStateException(
                            "the training run wrote no archive; see " + dir.resolve("training run.log"));
                }
                Files.move(training, archive, StandardCopyOption.ATOMIC_MOVE);
            }
        }
        return List.of("-XX:SharedArchiveFile=" + archive, "-jar", jar.toString());
    }

    private static void run(String what, List<String> args, Path dir) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(RelayProcess.javaBinary());
        command.addAll(args);
        Files.createDirectories(dir);
        Path log = dir.resolve(what + ".log");
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        try {
            if (!process.waitFor(3, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                throw new IllegalStateException(what + " of the exec jar did not end in 3 minutes; see " + log);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new UncheckedIOException(new IOException("interrupted", e));
        }
        if (process.exitValue() != 0) {
            throw new IllegalStateException(
                    what + " of the exec jar failed (exit " + process.exitValue() + "): " + command + "; see " + log);
        }
    }
}
