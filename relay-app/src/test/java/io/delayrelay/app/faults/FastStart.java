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
 * refresh, in the background of the first fork that needs it; relays started meanwhile run without it), under
 * target/relay-cds/, shared by every test JVM of the build (file locks keep two forks from extracting or training at
 * once). On this 2-core machine a relay start costs 2.3 s of CPU this way, against 5.8 s for {@code java -jar}
 * (both C1) and 10.4 s with C2: the suite starts about 50 relays, several at once.
 *
 * <p>The classes are the exec jar's, byte for byte; only the launcher differs (a plain class path instead of the jar's
 * nested jars). ExecJarIT starts {@code java -jar} on the exec jar itself.
 */
final class FastStart {

    /** The launch with the archive, once it exists (until then each call looks again). */
    private static List<String> launch;
    /** Whether this JVM started its attempt at the training run (one per JVM; a file lock makes it one per build). */
    private static boolean trainingStarted;
    /** Why the training run failed, if it did: the next launch says so instead of going on without the archive. */
    private static volatile RuntimeException trainingFailure;

    private FastStart() {}

    /**
     * The JVM options and {@code -jar} arguments that start the relay. Until the build's archive exists, the
     * extracted jar without it: the training run (about 14 s) goes on in the background instead of holding every
     * fork's first relays back, which left the machine idle at the start of the pool after packaging.
     */
    static synchronized List<String> launch() throws IOException {
        if (launch != null) {
            return launch;
        }
        if (trainingFailure != null) {
            throw trainingFailure;
        }
        Build build = extracted(RelayProcess.execJar().toAbsolutePath());
        if (Files.exists(build.archive())) {
            launch = List.of(
                    "-XX:SharedArchiveFile=" + build.archive(),
                    "-jar",
                    build.jar().toString());
            return launch;
        }
        if (!trainingStarted) {
            trainingStarted = true;
            Thread trainer = new Thread(() -> train(build), "relay-cds-training");
            trainer.setDaemon(true);
            trainer.start();
        }
        return List.of("-jar", build.jar().toString());
    }

    /** Where one build of the exec jar is extracted and its archive goes. */
    private record Build(Path root, Path dir, Path jar, Path archive) {}

    /** Extracts the exec jar once per build (a file lock keeps two forks from doing it at once). */
    private static Build extracted(Path execJar) throws IOException {
        Path root = Files.createDirectories(execJar.getParent().resolve("relay-cds"));
        String id = Files.getLastModifiedTime(execJar).toMillis() + "-" + Files.size(execJar);
        Path dir = root.resolve(id);
        Build build = new Build(root, dir, dir.resolve("app").resolve(execJar.getFileName()), dir.resolve("relay.jsa"));
        Path done = dir.resolve("extracted");
        try (FileChannel channel =
                        FileChannel.open(root.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                FileLock ignored = channel.lock()) {
            if (!Files.exists(done)) {
                run(
                        "extract",
                        List.of(
                                "-Djarmode=tools",
                                "-jar",
                                execJar.toString(),
                                "extract",
                                "--destination",
                                dir.resolve("app").toString(),
                                "--force"), // over what a build stopped mid-extraction left
                        dir);
                Files.createFile(done);
            }
        }
        return build;
    }

    /**
     * The training run, in the fork that gets the training lock first; the others go on without the archive until
     * it exists. A failure fails the next relay start of this fork, naming the log.
     */
    private static void train(Build build) {
        try (FileChannel channel = FileChannel.open(
                        build.root().resolve("training.lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                FileLock lock = channel.tryLock()) {
            if (lock == null || Files.exists(build.archive())) {
                return; // another fork trains, or has
            }
            Path training = build.dir().resolve("relay.jsa.tmp");
            List<String> args = new ArrayList<>(List.of(
                    "-Xmx384m",
                    "-XX:+UseSerialGC",
                    RelayProcess.C1,
                    "-XX:ArchiveClassesAtExit=" + training,
                    "-Dspring.context.exit=onRefresh",
                    "-jar",
                    build.jar().toString(),
                    "--spring.main.banner-mode=off",
                    "--server.port=0",
                    "--management.server.port=0",
                    "--spring.data.redis.host=" + TestServices.redis().host(),
                    "--spring.data.redis.port=" + TestServices.redis().port(),
                    "--spring.rabbitmq.host=" + TestServices.rabbit().host(),
                    "--spring.rabbitmq.port=" + TestServices.rabbit().port(),
                    "--relay.businesses.cds-training.exchange=amq.direct",
                    "--relay.businesses.cds-training.routing-key=cds-training"));
            run("training run", args, build.dir());
            if (!Files.exists(training)) {
                throw new IllegalStateException(
                        "the training run wrote no archive; see " + build.dir().resolve("training run.log"));
            }
            Files.move(training, build.archive(), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            trainingFailure = new UncheckedIOException("the class data sharing training run failed", e);
        } catch (RuntimeException e) {
            trainingFailure = e;
        }
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
