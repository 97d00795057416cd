package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * How an idle worker sleeps in {@link WakeSignal}: it parks (a spinning sleeper would hold the lock a producer's
 * wake-up needs), a sleep aimed at now or the past ends at once on any monotonic reading, and a wake-up already
 * accounted for does not cut the next sleep short. Complements {@link WakeSignalTest}.
 */
class WakeSignalSleepTest {

    private static final long NOW = 1_800_000_000_000L;

    /** Monotonic time well past zero, so that a deadline computed with the wrong sign lies far in the future. */
    private final AtomicLong nanos = new AtomicLong(10_000_000_000L);

    private final RedisClock clock = new RedisClock(() -> 0L, nanos::get);
    private final WakeSignal signal = new WakeSignal();

    WakeSignalSleepTest() {
        clock.observe(NOW);
    }

    @Test
    void aSleeperParksUntilAWakeUpForAnEntryDueNowEndsItWithThatShard() throws Exception {
        long observed = signal.generation();
        CompletableFuture<Integer> woken = new CompletableFuture<>();
        Thread sleeper = new Thread(() -> {
            try {
                woken.complete(signal.await(NOW + 60_000, clock, observed));
            } catch (Throwable e) {
                woken.completeExceptionally(e);
            }
        });
        sleeper.start();

        await().atMost(Duration.ofSeconds(5))
                .alias("the sleeper parks on the condition (it does not spin holding the lock)")
                .until(() -> sleeper.getState() == Thread.State.TIMED_WAITING);
        assertThat(woken).isNotDone();
        signal.wake(4, NOW);

        assertThat(woken.get(5, TimeUnit.SECONDS)).isEqualTo(4);
        sleeper.join(5_000);
        assertThat(assertTimeoutPreemptively(Duration.ofSeconds(5), signal::generation))
                .as("the sleeper left the signal free for the other workers, the wake-up is a new generation")
                .isNotEqualTo(observed);
    }

    @Test
    void aSleepUntilNowOrThePastEndsAtOnceWithoutAWakeUp() {
        long observed = signal.generation();

        assertTimeoutPreemptively(Duration.ofSeconds(5), () -> signal.awaitChange(NOW, clock, observed));
        assertTimeoutPreemptively(Duration.ofSeconds(5), () -> signal.awaitChange(NOW - 1_000, clock, observed));
        assertThat(assertTimeoutPreemptively(Duration.ofSeconds(5), () -> signal.await(NOW, clock, observed)))
                .isEqualTo(WakeSignal.NO_HINT);
    }

    /**
     * The worker handled the wake-up for shard 5 before it read the generation: the next sleep runs to its deadline
     * (on the real monotonic clock here) instead of ending at once for shard 5 again.
     */
    @Test
    void aWakeUpAlreadyAccountedForDoesNotCutTheNextSleepShort() throws Exception {
        RedisClock realClock = new RedisClock(() -> 0L, System::nanoTime);
        realClock.observe(NOW);
        signal.wake(5, NOW);
        long observed = signal.generation();

        long start = System.nanoTime();
        int hint = signal.await(NOW + 200, realClock, observed);
        long sleptMs = (System.nanoTime() - start) / 1_000_000;

        assertThat(hint).isEqualTo(WakeSignal.NO_HINT);
        assertThat(sleptMs).as("slept until the deadline 200 ms on").isBetween(150L, 5_000L);
    }
}
