package io.delayrelay.app.engine;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * When the entries of one pop-ahead ({@link io.delayrelay.app.trigger.BusinessSpec#lead()}) may be published: never
 * before their due time, in Redis time. pop.lua decided what to take with Redis {@code TIME} ({@code now}, in its
 * reply); the worker then waits on its own monotonic clock, from an offset taken from that reply:
 * <pre>
 *   Redis time at a later instant t  &gt;=  now + (t - received)
 * </pre>
 * where {@code received} is the monotonic time when the reply was in the worker's hands. This holds whatever the
 * skew between the relay host's wall clock and Redis's (the wall clock is never read): Redis read {@code TIME}
 * inside the script, before the reply left, so at {@code received} Redis time was already at least {@code now} (more
 * by the reply's way back and by the ms Redis floors {@code TIME} to). The bound errs late by that much (well under
 * a ms on a local network), never early. What it cannot see: a step back of Redis's own clock between the pop and
 * the publish, and a difference in the two clocks' rates over the wait (NTP slews by at most 0.5 ms per second: at
 * most 0.5 µs over a lead of a ms, 0.5 ms over the longest lead of 1 s, well inside the ms floor's margin on
 * average).
 * <p>
 * An entry is released once this bound and the relay's {@link RedisClock} (which its {@code x-delay-relayed-at}
 * stamp comes from) both reach its due time, so the stamp never reads before it either.
 */
final class DueGate {

    private static final long NANOS_PER_MS = 1_000_000;
    /** Sleeps are cut into slices of at most this (the estimate is read again after each). */
    private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final long redisNowMs;
    private final long receivedNanos;
    private final RedisClock clock;

    /**
     * @param redisNowMs    the pop's Redis {@code TIME} (its reply's {@code now})
     * @param receivedNanos {@link System#nanoTime()} when the reply was received (taken after the call returned)
     * @param clock         the relay's Redis time estimate (the stamp's clock)
     */
    DueGate(long redisNowMs, long receivedNanos, RedisClock clock) {
        this.redisNowMs = redisNowMs;
        this.receivedNanos = receivedNanos;
        this.clock = clock;
    }

    /** A lower bound of Redis time now, ms: the pop's reading plus the monotonic time since it was received. */
    long nowMs() {
        long sinceReply = (System.nanoTime() - receivedNanos) / NANOS_PER_MS;
        return Math.min(redisNowMs + sinceReply, clock.nowMs());
    }

    /** Whether an entry due at {@code dueMs} may be published now. */
    boolean due(long dueMs) {
        return nowMs() >= dueMs;
    }

    /**
     * Waits until {@code dueMs} has come (in Redis time, as above): at most the lead after the pop. A stop does not
     * cut it short (the entries are published at their time, at most the lead later); an interrupt (a stop whose
     * drain deadline passed) does, with {@link InterruptedException}: the entries not published yet are left to
     * their lease.
     */
    void await(long dueMs) throws InterruptedException {
        while (true) {
            long now = nowMs();
            if (now >= dueMs) {
                return;
            }
            // the bound moves in whole ms: sleep until the ms it reaches dueMs (a little late, never early)
            long sleepNanos = Math.min(SLICE_NANOS, (dueMs - now) * NANOS_PER_MS);
            LockSupport.parkNanos(this, sleepNanos);
            if (Thread.interrupted()) {
                throw new InterruptedException("interrupted while waiting for a popped entry's due time");
            }
        }
    }
}
