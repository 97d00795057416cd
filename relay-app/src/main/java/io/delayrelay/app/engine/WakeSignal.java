package io.delayrelay.app.engine;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Where a business's idle workers sleep: until a deadline, or earlier when a producer announces an entry due
 * sooner (on {@code K:wake}), or when the relay is stopped, paused or resumed.
 */
final class WakeSignal {

    /** Returned by {@link #await} when no wake-up named a shard. */
    static final int NO_HINT = -1;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private long generation;
    private int hintShard = NO_HINT;
    private long hintDueMs;

    /** A producer added an entry due at {@code dueMs} (Redis time) that is the earliest of its shard. */
    void wake(int shard, long dueMs) {
        lock.lock();
        try {
            generation++;
            hintShard = shard;
            hintDueMs = dueMs;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Wakes every sleeper now (stop, pause, resume, reload). */
    void wakeAll() {
        wake(NO_HINT, Long.MIN_VALUE);
    }

    /**
     * Sleeps until Redis time reaches {@code untilMs}, or until a wake-up for an entry due before that comes
     * due. Returns the shard named by that wake-up, or {@link #NO_HINT}.
     */
    int await(long untilMs, RedisClock clock) throws InterruptedException {
        return await(untilMs, clock, generation());
    }

    /**
     * Sleeps until Redis time reaches {@code untilMs} or any wake-up comes after {@code observedGeneration} was read
     * (while the caller decided how long to sleep from what it knew then). The caller then decides again from what it
     * knows now: a wake-up names one shard, and two wake-ups in a row (an entry due now, then one due later) must
     * not leave a sleeper aimed at the later one.
     */
    void awaitChange(long untilMs, RedisClock clock, long observedGeneration) throws InterruptedException {
        lock.lock();
        try {
            long deadline = clock.nanos() + clock.nanosUntil(untilMs);
            while (generation == observedGeneration) {
                long remaining = deadline - clock.nanos();
                if (remaining <= 0) {
                    return;
                }
                changed.awaitNanos(remaining);
            }
        } finally {
            lock.unlock();
        }
    }

    /** The current wake-up generation: read it before deciding how long to sleep, then pass it to await. */
    long generation() {
        lock.lock();
        try {
            return generation;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Like {@link #await(long, RedisClock)}, but a wake-up that came after {@code observedGeneration} was read
     * (while the caller decided how long to sleep) counts as if it came during the sleep, so it cannot be missed.
     */
    int await(long untilMs, RedisClock clock, long observedGeneration) throws InterruptedException {
        lock.lock();
        try {
            long seen = observedGeneration;
            // Redis time is turned into a monotonic deadline once: a host clock step cannot stretch or cut the sleep
            long deadline = clock.nanos() + clock.nanosUntil(untilMs);
            int hint = NO_HINT;
            while (true) {
                if (generation != seen) {
                    seen = generation;
                    if (hintShard == NO_HINT) {
                        return NO_HINT;
                    }
                    long hintDeadline = clock.nanos() + clock.nanosUntil(hintDueMs);
                    if (hintDeadline - deadline < 0) {
                        deadline = hintDeadline;
                        hint = hintShard;
                    }
                }
                long remaining = deadline - clock.nanos();
                if (remaining <= 0) {
                    return hint;
                }
                changed.awaitNanos(remaining);
            }
        } finally {
            lock.unlock();
        }
    }
}
