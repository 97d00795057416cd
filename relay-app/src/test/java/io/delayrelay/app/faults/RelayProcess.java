package io.delayrelay.app.faults;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The relay as a real separate JVM: the exec jar relay-app/target/relay-app-*-exec.jar with {@code --k=v ...},
 * output to a log file under target/faults. Can be killed with SIGKILL ({@code kill -9}) and reports its CPU time.
 */
public final class RelayProcess implements AutoCloseable {

    private final Process process;
    private final Path log;

    private RelayProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** Starts the exec jar with the given Spring properties (web off). */
    /**
     * The JVM option of a relay that relays thousands of messages, not hundreds of thousands: C1 only. C2's compiles
     * of a relay that lives a minute cost more CPU than they save, and the pool runs several relays beside other
     * tests; a drain of 200,000 (KillNineMidDrainTest) or a lag bound at 3,300 msg/s (ColdTierIT) keeps C2.
     */
    public static final String C1 = "-XX:TieredStopAtLevel=1";

    public static RelayProcess start(String name, Map<String, Object> properties) throws IOException {
        return start(name, properties, false);
    }

    /**
     * Starts the exec jar with the given Spring properties and extra JVM options; {@code web} keeps the servlet
     * server (set {@code server.port} and {@code management.server.port}) for tests of the actuator endpoints. The
     * jar runs extracted, with a class data sharing archive ({@link FastStart}): the same classes, a third of the
     * start-up CPU. {@link #startJar} runs {@code java -jar} on the exec jar itself.
     */
    public static RelayProcess start(String name, Map<String, Object> properties, boolean web, String... jvmOptions)
            throws IOException {
        return start(name, properties, web, FastStart.launch(), jvmOptions);
    }

    /** As {@link #start(String, Map, boolean, String...)}, but {@code java -jar} on the exec jar as built. */
    public static RelayProcess startJar(String name, Map<String, Object> properties, boolean web, String... jvmOptions)
            throws IOException {
        return start(name, properties, web, List.of("-jar", execJar().toString()), jvmOptions);
    }

    private static RelayProcess start(
            String name, Map<String, Object> properties, boolean web, List<String> launch, String... jvmOptions)
            throws IOException {
        List<String> command = new ArrayList<>(List.of(javaBinary(), "-Xmx384m", "-XX:+UseSerialGC"));
        command.addAll(List.of(jvmOptions));
        command.addAll(launch);
        // A key given twice on the command line binds as "a,b": add these only when the caller did not.
        if (!properties.containsKey("spring.main.banner-mode")) {
            command.add("--spring.main.banner-mode=off");
        }
        if (!web) {
            command.add("--spring.main.web-application-type=none");
        }
        properties.forEach((k, v) -> command.add("--" + k + "=" + v));
        Path dir = Files.createDirectories(Path.of("target", "faults"));
        Path log = dir.resolve(name + ".log");
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        return new RelayProcess(process, log);
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public Path log() {
        return log;
    }

    /** Everything the process printed so far. */
    public String output() throws IOException {
        return Files.exists(log) ? Files.readString(log) : "";
    }

    /**
     * Messages this relay reported as published but not confirmed in time ("N of M messages not confirmed (confirm
     * timeout)"; the batch settler's log line) and therefore retried: each may reach the consumer once more. A
     * duplicate bound counts them, on a busy machine the broker's confirms can take longer than publish-timeout.
     */
    public long retriedAfterConfirmTimeout() throws IOException {
        Matcher m = CONFIRM_TIMEOUT.matcher(output());
        long total = 0;
        while (m.find()) {
            total += Long.parseLong(m.group(1));
        }
        return total;
    }

    private static final Pattern CONFIRM_TIMEOUT =
            Pattern.compile("([0-9]+) of [0-9]+ messages not confirmed \\(confirm timeout\\)");

    /** Waits for the process to end by itself; returns its exit code, or null if it still runs after the timeout. */
    public Integer awaitExit(Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) ? process.exitValue() : null;
    }

    /** Whether the log shows the relay started (its engine logged "delay-relay started"). */
    public boolean started() throws IOException {
        return Files.exists(log) && Files.readString(log).contains("delay-relay started");
    }

    /**
     * The relay's threads as {@code jcmd <pid> Thread.print} prints them, written beside its log: what a test saves
     * before it fails on a relay that stopped making progress.
     */
    public Path threadDump() throws IOException, InterruptedException {
        Path dump = log.resolveSibling(log.getFileName().toString().replace(".log", "") + "-threads.txt");
        Process jcmd = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                        Long.toString(pid()),
                        "Thread.print")
                .redirectErrorStream(true)
                .redirectOutput(dump.toFile())
                .start();
        if (!jcmd.waitFor(30, TimeUnit.SECONDS)) {
            jcmd.destroyForcibly();
        }
        return dump;
    }

    /** SIGKILL: no shutdown hook, no graceful stop; waits until the process is gone. */
    public void kill9() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("relay pid " + pid() + " did not die after SIGKILL");
        }
    }

    /** User + system CPU time of the process so far, in ms (from /proc/&lt;pid&gt;/stat). */
    long cpuMs() throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid()), "stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime (fields 14 and 15)
        return ticks * 10; // USER_HZ is 100 on Linux
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy(); // SIGTERM: graceful
            if (!process.waitFor(40, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** relay-app/target/relay-app-*-exec.jar; must be newer than the compiled classes (scripts/faults.sh builds it). */
    public static Path execJar() throws IOException {
        Path target = Path.of("target");
        Path jar;
        try (Stream<Path> files = Files.list(target)) {
            jar = files.filter(f -> f.getFileName().toString().matches("relay-app-.*-exec\\.jar"))
                    .findFirst()
                    .orElseThrow(
                            () -> new IllegalStateException(
                                    "no relay-app-*-exec.jar in " + target.toAbsolutePath()
                                            + ": build it first (scripts/faults.sh does: ./mvnw package -DskipTests -pl relay-app -am)"));
        }
        long jarTime = jar.toFile().lastModified();
        try (Stream<Path> classes = Files.walk(target.resolve("classes"))) {
            File newer = classes.map(Path::toFile)
                    .filter(f -> f.getName().endsWith(".class") || f.getName().endsWith(".lua"))
                    .filter(f -> f.lastModified() > jarTime + 2000)
                    .findFirst()
                    .orElse(null);
            if (newer != null) {
                // Other builds in the same work tree recompile target/classes; warn rather than fail.
                System.out.println("WARNING: " + jar + " is older than " + newer + "; scripts/faults.sh rebuilds it");
            }
        }
        return jar;
    }
}
