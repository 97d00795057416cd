package io.delayrelay.app.engine;

import java.util.function.LongSupplier;

/**
 * Estimates Redis server time from the last Redis {@code TIME} a script returned plus the time elapsed since on
 * the monotonic clock, so sleeps are aimed at Redis time (the time due scores are compared with) without a round
 * trip. The host's wall clock is read only until the first Redis reading: a host clock step (NTP, a VM resumed)
 * changes no estimate and no sleep.
 */
public final class RedisClock {

    private static final long NANOS_PER_MS = 1_000_000;
    private static final long DAY_MS = 86_400_000;

    private final LongSupplier wallMs;
    private final LongSupplier nanos;
    private volatile Reading last;

    /** A Redis reading and the monotonic time it was taken. */
    private record Reading(long redisMs, long atNanos) {}

    public RedisClock() {
        this(System::currentTimeMillis, System::nanoTime);
    }

    /** For tests: a settable host wall clock (epoch ms) and monotonic clock (nanos). */
    RedisClock(LongSupplier wallMs, LongSupplier nanos) {
        this.wallMs = wallMs;
        this.nanos = nanos;
    }

    /** Records a Redis TIME reading, in epoch ms, taken just now. */
    public void observe(long redisNowMs) {
        last = new Reading(redisNowMs, nanos.getAsLong());
    }

    /** Estimated Redis time now, epoch ms. */
    public long nowMs() {
        Reading reading = last;
        if (reading == null) {
            return wallMs.getAsLong();
        }
        return reading.redisMs() + (nanos.getAsLong() - reading.atNanos()) / NANOS_PER_MS;
    }

    /** The monotonic clock, nanos: for measuring durations. */
    long nanos() {
        return nanos.getAsLong();
    }

    /**
     * Nanos from now until Redis time reaches {@code redisMs}, estimated now (negative when already past), at most
     * a day either way: far enough for any sleep, and safe from overflow.
     */
    long nanosUntil(long redisMs) {
        long now = nowMs();
        long target = Math.max(now - DAY_MS, Math.min(now + DAY_MS, redisMs));
        return (target - now) * NANOS_PER_MS;
    }
}
