package io.delayrelay.app.support;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * A chore run with a fixed delay on its own daemon thread, started and stopped with the application context. A run
 * that throws is logged ({@code "<what> failed"}, by the subclass's logger) and the next run happens as scheduled.
 * {@link #stop()} interrupts a run in progress and waits (at most {@link #STOP_WAIT}) for the thread to end before
 * {@link #afterStop()}. Starting a started task, or stopping a stopped one, does nothing.
 */
public abstract class PeriodicTask implements SmartLifecycle {

    /** Longest wait in {@link #stop()} for an interrupted run to end. */
    public static final Duration STOP_WAIT = Duration.ofSeconds(5);

    private final Logger log = LoggerFactory.getLogger(getClass());
    private final String threadName;
    private final String what;
    private final Duration initialDelay;
    private final Duration delay;
    private ScheduledExecutorService executor;
    private volatile boolean running;

    /**
     * @param threadName   name of the task's thread
     * @param what         the chore, for the log line of a failed run ({@code "<what> failed"})
     * @param initialDelay before the first run
     * @param delay        between the end of one run and the start of the next
     */
    protected PeriodicTask(String threadName, String what, Duration initialDelay, Duration delay) {
        this.threadName = threadName;
        this.what = what;
        this.initialDelay = initialDelay;
        this.delay = delay;
    }

    /** The first run one {@code delay} after the start. */
    protected PeriodicTask(String threadName, String what, Duration delay) {
        this(threadName, what, delay, delay);
    }

    /** One run, on the task's thread. */
    protected abstract void runOnce();

    /** On the starting thread, before the first run is scheduled; an exception leaves the task stopped. */
    protected void beforeStart() {}

    /** On the stopping thread, once the task's thread has ended (or {@link #STOP_WAIT} passed). */
    protected void afterStop() {}

    @Override
    public final synchronized void start() {
        if (running) {
            return;
        }
        beforeStart();
        executor = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named(threadName));
        running = true;
        try {
            executor.scheduleWithFixedDelay(
                    this::runSafely, initialDelay.toMillis(), delay.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
            // a delay the executor refuses (zero, negative): stopped, as if never started
            running = false;
            executor.shutdownNow();
            executor = null;
            throw e;
        }
    }

    private void runSafely() {
        try {
            runOnce();
        } catch (RuntimeException e) {
            log.warn("{} failed", what, e);
        }
    }

    @Override
    public final synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        executor.shutdownNow();
        try {
            if (!executor.awaitTermination(STOP_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                log.warn("{}: thread {} still busy {} after stop; not waiting longer", what, threadName, STOP_WAIT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        executor = null;
        afterStop();
    }

    /** Between {@link #start()} and {@link #stop()}; already false while {@link #afterStop()} runs. */
    @Override
    public final boolean isRunning() {
        return running;
    }
}
