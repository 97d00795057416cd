package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One business's worker threads: starts as many as the configuration asks, starts again those that died, and stops
 * them (bounded). A worker runs while {@link #keeps(int)} says so: surplus workers of a reload to fewer threads
 * notice on their own and exit. A worker catches everything per iteration, so a death is rare (an error thrown
 * while handling an error); it is logged at once and repaired by the next {@link #adjust()}.
 */
final class WorkerPool {

    private static final Logger log = LoggerFactory.getLogger(WorkerPool.class);

    /** Makes worker number {@code index}; it must run while {@code keepRunning} is true. */
    @FunctionalInterface
    interface WorkerFactory {
        Runnable create(int index, BooleanSupplier keepRunning);
    }

    private final BusinessState state;
    private final WorkerFactory factory;
    private final List<Thread> workers = new ArrayList<>();
    private final Set<String> died = ConcurrentHashMap.newKeySet();
    private volatile boolean running;

    WorkerPool(BusinessState state, WorkerFactory factory) {
        this.state = state;
        this.factory = factory;
    }

    synchronized void start() {
        running = true;
        adjust();
    }

    /**
     * Starts the workers the configuration asks for that do not run (never started, or died). Returns the names of
     * those that had died and run again.
     */
    synchronized List<String> adjust() {
        if (!running) {
            return List.of();
        }
        workers.removeIf(t -> !t.isAlive());
        Set<String> names = new HashSet<>();
        workers.forEach(t -> names.add(t.getName()));
        List<String> restarted = new ArrayList<>();
        for (int i = 0; i < state.spec().threads(); i++) {
            String name = state.spec().threadNamePrefix() + i;
            if (!names.contains(name)) {
                // Read the death mark before the new thread starts: a new worker that dies at once marks its name
                // again, and that mark belongs to the next round, not to this restart.
                if (died.remove(name)) {
                    restarted.add(name);
                }
                int index = i;
                Thread thread = new Thread(factory.create(index, () -> keeps(index)), name);
                thread.setUncaughtExceptionHandler(this::died);
                workers.add(thread);
                thread.start();
            }
        }
        return restarted;
    }

    private void died(Thread worker, Throwable cause) {
        died.add(worker.getName());
        log.error(
                "business={}: worker {} died ({}); it is started again within the reaper interval",
                state.spec().name(),
                worker.getName(),
                cause.toString(),
                cause);
    }

    /** Whether worker {@code index} should keep running (false after a stop or a reload to fewer threads). */
    boolean keeps(int index) {
        return running && index < state.spec().threads();
    }

    boolean isRunning() {
        return running;
    }

    /**
     * Stops: workers finish their iteration, are waited for until {@code deadlineNanos}, then interrupted (their
     * batch is left to the lease). {@code wakeAll} wakes sleeping workers so they notice at once.
     */
    synchronized void stop(long deadlineNanos, Runnable wakeAll, Duration timeout) {
        running = false;
        wakeAll.run();
        for (Thread worker : workers) {
            try {
                long left = deadlineNanos - System.nanoTime();
                if (left > 0) {
                    worker.join(Math.max(1, left / 1_000_000));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (Thread worker : workers) {
            if (worker.isAlive()) {
                log.warn(
                        "business={}: worker {} still busy after {}, interrupting; its batch is left to the lease",
                        state.spec().name(),
                        worker.getName(),
                        timeout);
                worker.interrupt();
            }
        }
        workers.clear();
    }

    /** Live worker threads. */
    synchronized int live() {
        return (int) workers.stream().filter(Thread::isAlive).count();
    }
}
