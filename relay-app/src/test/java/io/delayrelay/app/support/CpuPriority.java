package io.delayrelay.app.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * CPU priority for the processes whose timing a test in the shared pool of forks asserts (a relay's lag, its test
 * JVM's consumer, its private Redis): they run at nice {@value #RAISED} while the pool's other forks, their relays and
 * their servers run at 0. The pool runs several fault classes at once so that their waits overlap; one class's timing
 * bound then holds against the others' JVM start-ups instead of depending on when they happen. What is measured is
 * still the relay: it gets the CPU a relay host gives it, not more than the box has.
 * <p>
 * Linux keeps a nice value per thread, and a new thread inherits its creator's: every thread of the process is
 * reniced, so the threads it starts later are too. A lower nice value needs root (CI runs as root); without it this
 * does nothing and says so once on stderr (the test then runs at the pool's priority, as before).
 */
public final class CpuPriority {

    /** The nice value of the raised processes (the pool runs at 0; CFS gives -10 about ten times the weight). */
    public static final int RAISED = -10;

    private static volatile boolean warned;

    private CpuPriority() {}

    /**
     * Raises every thread of this JVM (the test's consumers and clocks) and of {@code pids} (its relays, its private
     * servers) to nice {@value #RAISED}. Call {@link #restoreSelf()} when the test ends: the fork runs other classes.
     */
    public static void raiseSelfAnd(long... pids) {
        renice(ProcessHandle.current().pid(), RAISED);
        for (long pid : pids) {
            renice(pid, RAISED);
        }
    }

    /** Puts every thread of this JVM back to nice 0. */
    public static void restoreSelf() {
        renice(ProcessHandle.current().pid(), 0);
    }

    private static boolean renice(long pid, int nice) {
        List<String> command = new ArrayList<>(List.of("renice", "-n", Integer.toString(nice), "-p"));
        try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            tasks.map(t -> t.getFileName().toString()).forEach(command::add);
        } catch (IOException e) {
            return warn("cannot list the threads of " + pid + ": " + e.getMessage());
        }
        try {
            Process renice = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            if (!renice.waitFor(10, TimeUnit.SECONDS)) {
                renice.destroyForcibly();
                return warn("renice of " + pid + " did not finish in 10 s");
            }
            // renice exits non-zero when a thread ended meanwhile, too: the others were set
            return renice.exitValue() == 0 || nice >= 0 || isRoot() || warn("not root: nice " + nice + " refused");
        } catch (IOException e) {
            return warn("renice is not installed (util-linux): " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static boolean isRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream()
                    .filter(l -> l.startsWith("Uid:"))
                    .anyMatch(l -> l.split("\\s+")[2].equals("0"));
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean warn(String why) {
        if (!warned) {
            warned = true;
            System.err.println("CpuPriority: timed processes keep the pool's CPU priority (" + why + ")");
        }
        return false;
    }
}
