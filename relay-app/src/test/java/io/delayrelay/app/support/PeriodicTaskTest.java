package io.delayrelay.app.support;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** The periodic task the relay's chores share: failures, stop, start twice, on a real thread (no real Redis). */
class PeriodicTaskTest {

    private static final Duration WAIT = Duration.ofSeconds(5);

    /** Counts its starts, runs and stops; what a run does is set per test. */
    private static final class Probe extends PeriodicTask {
        final AtomicInteger starts = new AtomicInteger();
        final AtomicInteger runs = new AtomicInteger();
        final AtomicInteger stops = new AtomicInteger();
        final AtomicReference<Thread> thread = new AtomicReference<>();
        final AtomicBoolean inRun = new AtomicBoolean();
        final AtomicBoolean runEndedBeforeAfterStop = new AtomicBoolean();
        volatile Runnable beforeStart = () -> {};
        volatile Runnable body = () -> {};

        Probe(String threadName) {
            super(threadName, "probe", Duration.ZERO, Duration.ofMillis(1));
        }

        @Override
        protected void beforeStart() {
            beforeStart.run();
            starts.incrementAndGet();
        }

        @Override
        protected void runOnce() {
            thread.set(Thread.currentThread());
            inRun.set(true);
            runs.incrementAndGet();
            try {
                body.run();
            } finally {
                inRun.set(false);
            }
        }

        @Override
        protected void afterStop() {
            runEndedBeforeAfterStop.set(!inRun.get());
            stops.incrementAndGet();
        }
    }

    private Probe task;

    @AfterEach
    void stopTask() {
        if (task != null) {
            task.stop();
        }
    }

    @Test
    void aRunThatThrowsDoesNotStopLaterRuns() {
        task = new Probe("test-periodic-throws");
        task.body = () -> {
            throw new IllegalStateException("every run fails");
        };

        task.start();

        await().atMost(WAIT).until(() -> task.runs.get() >= 3);
        assertThat(task.isRunning()).isTrue();
        assertThat(task.thread.get().getName()).isEqualTo("test-periodic-throws");
        assertThat(task.thread.get().isDaemon()).isTrue();
    }

    @Test
    void stopInterruptsARunInProgressWaitsForItAndEndsTheRuns() throws Exception {
        task = new Probe("test-periodic-stop");
        CountDownLatch running = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        task.body = () -> {
            running.countDown();
            try {
                new CountDownLatch(1).await(); // blocks until stop() interrupts it
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
        };
        task.start();
        assertThat(running.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();

        task.stop();

        assertThat(task.isRunning()).isFalse();
        assertThat(interrupted).as("the run in progress was interrupted").isTrue();
        assertThat(task.runEndedBeforeAfterStop).as("stop() waited for the run").isTrue();
        assertThat(task.stops).hasValue(1);
        assertThat(task.runs).as("the blocked run was the only one").hasValue(1);
        await().atMost(WAIT).until(() -> !task.thread.get().isAlive());
        await().during(Duration.ofMillis(200)).atMost(WAIT).until(() -> task.runs.get() == 1);
    }

    @Test
    void startingTwiceIsHarmlessAndAStoppedTaskStartsAgain() {
        task = new Probe("test-periodic-twice");

        task.start();
        task.start();

        await().atMost(WAIT).until(() -> task.runs.get() >= 2);
        assertThat(task.starts).hasValue(1);
        assertThat(threadsNamed("test-periodic-twice")).hasSize(1);

        task.stop();
        task.stop();
        assertThat(task.stops).hasValue(1);

        int before = task.runs.get();
        task.start();
        await().atMost(WAIT).until(() -> task.runs.get() > before);
        assertThat(task.starts).hasValue(2);
        assertThat(task.isRunning()).isTrue();
    }

    @Test
    void aStartThatFailsLeavesTheTaskStopped() {
        task = new Probe("test-periodic-fails-to-start");
        task.beforeStart = () -> {
            throw new IllegalStateException("no meters");
        };

        assertThatThrownBy(task::start)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("no meters");

        assertThat(task.isRunning()).isFalse();
        assertThat(threadsNamed("test-periodic-fails-to-start")).isEmpty();
        task.stop();
        assertThat(task.stops).as("nothing to stop").hasValue(0);
    }

    private static List<Thread> threadsNamed(String name) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(name) && t.isAlive())
                .toList();
    }
}
