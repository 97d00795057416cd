package io.delayrelay.app.engine;

import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where idle workers sleep, on a settable clock. Each case decides without waiting: a wake-up that came while the
 * worker decided how long to sleep must count (the two lost-wake-up fixes), a past deadline returns at once.
 */
class WakeSignalTest {

    private static final long NOW = 1_800_000_000_000L;

    private final AtomicLong nanos = new AtomicLong(1_000);
    private final RedisClock clock = new RedisClock(() -> 0L, nanos::get);
    private final WakeSignal signal = new WakeSignal();

    WakeSignalTest() {
        clock.observe(NOW);
    }

    @Test
    void aWakeUpForAnEntryDueNowThatCameWhileDecidingEndsTheSleepWithItsShard() throws Exception {
        long observed = signal.generation();
        signal.wake(5, NOW);

        assertThat(signal.await(NOW + 60_000, clock, observed)).isEqualTo(5);
    }

    @Test
    void aStopPauseOrReloadThatCameWhileDecidingEndsTheSleepWithoutAShard() throws Exception {
        long observed = signal.generation();
        signal.wakeAll();

        assertThat(signal.await(NOW + 60_000, clock, observed)).isEqualTo(WakeSignal.NO_HINT);
    }

    /** The idle worker's sleep: any wake-up after the generation was read ends it, even one for a later entry. */
    @Test
    void aChangeEndsTheSleepWhateverItAnnouncesAndOnlyAChangeAfterTheReading() throws Exception {
        signal.wake(1, NOW);
        long observed = signal.generation();
        signal.wake(2, NOW + 10_000);
        Thread sleeper = sleepingUntilAChangeAfter(observed);
        sleeper.join(5_000);
        assertThat(sleeper.isAlive()).as("ended by the wake-up for shard 2").isFalse();

        Thread idle = sleepingUntilAChangeAfter(signal.generation());
        idle.join(300);
        assertThat(idle.isAlive()).as("no change since its reading: asleep").isTrue();
        signal.wake(3, NOW + 20_000);
        idle.join(5_000);
        assertThat(idle.isAlive()).isFalse();
    }

    /** A thread that sleeps in {@link WakeSignal#awaitChange} for a minute of Redis time, started. */
    private Thread sleepingUntilAChangeAfter(long observed) {
        Thread sleeper = new Thread(() -> {
            try {
                signal.awaitChange(NOW + 60_000, clock, observed);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        sleeper.start();
        return sleeper;
    }

    @Test
    void aWakeUpBeforeTheGenerationWasReadIsAlreadyAccountedFor() throws Exception {
        // due before the deadline: if it counted as new, await would return its shard instead of NO_HINT
        signal.wake(5, NOW - 1);
        long observed = signal.generation();

        assertThat(signal.await(NOW, clock, observed))
                .as("deadline reached, no new wake-up")
                .isEqualTo(WakeSignal.NO_HINT);
    }

    @Test
    void aWakeUpForALaterEntryThanTheDeadlineDoesNotNameItsShard() throws Exception {
        long observed = signal.generation();
        signal.wake(2, NOW + 10_000);
        nanos.addAndGet(1_000_000_000L);

        assertThat(signal.await(NOW + 500, clock, observed)).isEqualTo(WakeSignal.NO_HINT);
    }

    @Test
    void aDeadlineInThePastReturnsAtOnce() throws Exception {
        assertThat(signal.await(NOW - 1, clock)).isEqualTo(WakeSignal.NO_HINT);
    }
}
