package io.delayrelay.app.engine;

import java.util.function.LongSupplier;

/**
 * Estimates Redis server time from the last Redis {@code TIME} a script returned plus the time elapsed since on
 * the monotonic clock, so sleeps are aimed at Redis time (the time due scores are compared with) without a round
 * trip. The host's wall clock is read only until the first Redis reading: a host clock step (NTP, a VM resumed)
 * changes no estimate and no sleep.
 * <p>
 * Every reading is a lower bound of Redis time at the moment it is observed (TIME was read inside a script, and the
 * reply took some time to come back; Redis floors TIME to the ms), so the estimate errs late, never early. Of two
 * readings the one giving the higher estimate is the better bound: a reading that gives a lower estimate than the
 * one held (a pop whose reply took longer to come back than the last one's) is ignored while the held one is younger
 * than {@link #KEEP_NANOS}, so that the estimate does not step back (an {@code x-delay-relayed-at} stamp taken after
 * a pop-ahead waited for a due time never reads below it); after that any reading is taken, so that the two
 * machines' clock rates (NTP slewing, at most 0.5 ms per second) or a step back of Redis's clock cannot carry the
 * estimate ahead of Redis time for long.
 */
public final class RedisClock {

    private static final long NANOS_PER_MS = 1_000_000;
    private static final long DAY_MS = 86_400_000;
    /** How long a reading is kept against later readings that would give a lower estimate. */
    static final long KEEP_NANOS = 1_000_000_000L;

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
        long at = nanos.getAsLong();
        Reading held = last;
        if (held != null
                && at - held.atNanos() < KEEP_NANOS
                && held.redisMs() + (at - held.atNanos()) / NANOS_PER_MS > redisNowMs) {
            // a lower bound no better than the one held (its reply took longer to come back)
            return;
        }
        last = new Reading(redisNowMs, at);
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
