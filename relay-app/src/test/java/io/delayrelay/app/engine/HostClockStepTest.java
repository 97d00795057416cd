package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 11 defect 7: sleeps were measured on the host clock offset by one Redis TIME, so a host clock step
 * stretched every sleep past max-idle (backward) or ended it at once (forward). A step of 10 s either way must
 * change nothing observable: the Redis time estimate and the length of a worker's sleep stay the same.
 */
class HostClockStepTest {

    private static final long REDIS_NOW = 1_800_000_000_000L;
    private static final long TEN_SECONDS_MS = 10_000;
    private static final long SLEEP_MS = 200;

    private final AtomicLong hostWallMs = new AtomicLong(REDIS_NOW - 3);
    private final AtomicLong monotonicNanos = new AtomicLong(42);

    @Test
    void aHostClockStepOfTenSecondsChangesNoRedisTimeEstimate() {
        RedisClock clock = new RedisClock(hostWallMs::get, monotonicNanos::get);
        clock.observe(REDIS_NOW);

        hostWallMs.addAndGet(-TEN_SECONDS_MS);
        assertThat(clock.nowMs()).isEqualTo(REDIS_NOW);
        hostWallMs.addAndGet(2 * TEN_SECONDS_MS);
        assertThat(clock.nowMs()).isEqualTo(REDIS_NOW);

        monotonicNanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(75));
        assertThat(clock.nowMs())
                .as("Redis time advances with the monotonic clock only")
                .isEqualTo(REDIS_NOW + 75);
        assertThat(clock.nanosUntil(REDIS_NOW + 275)).isEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
    }

    @Test
    void anIdleSleepEndsOnTimeWhenTheHostClockStepsBackTenSeconds() throws Exception {
        RedisClock clock = new RedisClock(hostWallMs::get, System::nanoTime);
        long observedAt = System.nanoTime();
        clock.observe(REDIS_NOW);
        hostWallMs.addAndGet(-TEN_SECONDS_MS);

        long slept = sleepUntil(clock, REDIS_NOW + SLEEP_MS, observedAt);

        assertThat(slept).as("ms slept, aimed at %d ms", SLEEP_MS).isBetween(SLEEP_MS, SLEEP_MS + 2_000);
    }

    @Test
    void anIdleSleepIsNotCutShortWhenTheHostClockStepsForwardTenSeconds() throws Exception {
        RedisClock clock = new RedisClock(hostWallMs::get, System::nanoTime);
        long observedAt = System.nanoTime();
        clock.observe(REDIS_NOW);
        hostWallMs.addAndGet(TEN_SECONDS_MS);

        long slept = sleepUntil(clock, REDIS_NOW + SLEEP_MS, observedAt);

        assertThat(slept).as("ms slept, aimed at %d ms", SLEEP_MS).isBetween(SLEEP_MS, SLEEP_MS + 2_000);
    }

    /**
     * Sleeps on a wake signal until Redis time {@code untilMs}; returns the ms from the Redis reading (taken at
     * {@code observedAtNanos}) to the wake-up. At most 3 s are waited.
     */
    private static long sleepUntil(RedisClock clock, long untilMs, long observedAtNanos) throws Exception {
        WakeSignal signal = new WakeSignal();
        CompletableFuture<Long> slept = CompletableFuture.supplyAsync(() -> {
            try {
                signal.await(untilMs, clock);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - observedAtNanos);
        });
        try {
            return slept.get(Duration.ofSeconds(3).toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            signal.wakeAll();
            return slept.get(1, TimeUnit.SECONDS);
        }
    }
}
