package io.delayrelay.app.engine.wake;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

/**
 * Turns keyspace notifications of one business's shards into peeks at each shard's earliest score, at most one
 * peek per shard in flight and one per {@link #WINDOW_MS}: a notified write costs a cheap read of the shard's head
 * (not a pop), and a burst of writes to a shard costs one read. The score read is handed to {@code found}, which
 * lowers the shard's known due time, so a worker pops the shard when its earliest entry falls due, however far
 * ahead it was written.
 * <p>
 * A write notified while a peek of its shard is in flight is read by another peek after it: the first may have
 * been answered before the write. A write to a shard that a worker pops within {@link #WINDOW_MS} anyway (its known
 * due time is that close) is not peeked: that pop reads it. A peek that fails hands {@code Long.MIN_VALUE} ("look now") to {@code found}, so
 * a worker pops the shard and meets whatever is wrong with it there, where it is counted, logged and quarantined.
 */
final class ShardPeeks {

    /** Peeks of one shard start at least this far apart. */
    static final long WINDOW_MS = 5;

    /** The shard's earliest score, or {@link ShardWakeups#NONE} when it is empty; a failed read fails the stage. */
    @FunctionalInterface
    interface HeadReader {
        CompletionStage<Long> earliest(int shard);
    }

    /** Receives a shard's earliest score ({@code Long.MIN_VALUE}: unknown, look now). */
    @FunctionalInterface
    interface Found {
        void found(int shard, long dueMs);
    }

    private static final int IDLE = 0;
    /** A peek is scheduled or in flight. */
    private static final int BUSY = 1;
    /** A peek is scheduled or in flight, and a write came after it started: another peek must follow. */
    private static final int BUSY_AGAIN = 2;

    private final HeadReader reader;
    private final Found found;
    private final IntPredicate poppedSoon;
    private final ScheduledExecutorService timer;
    private final LongSupplier nanos;
    private final AtomicIntegerArray state;
    private final AtomicLongArray lastStartNanos;

    /**
     * {@code poppedSoon} tells whether a shard is popped within {@link #WINDOW_MS} anyway (so a peek would learn
     * nothing a worker does not read then).
     */
    ShardPeeks(
            int maxShards,
            HeadReader reader,
            Found found,
            IntPredicate poppedSoon,
            ScheduledExecutorService timer,
            LongSupplier nanos) {
        this.reader = reader;
        this.found = found;
        this.poppedSoon = poppedSoon;
        this.timer = timer;
        this.nanos = nanos;
        this.state = new AtomicIntegerArray(maxShards);
        this.lastStartNanos = new AtomicLongArray(maxShards);
    }

    /** Shards beyond this are not peeked (notifications for them are ignored; the safety sweep still looks). */
    int maxShards() {
        return state.length();
    }

    /** A write to {@code shard} was notified. */
    void notified(int shard) {
        while (true) {
            int s = state.get(shard);
            if (s == BUSY_AGAIN) {
                return;
            }
            if (s == BUSY) {
                if (state.compareAndSet(shard, BUSY, BUSY_AGAIN)) {
                    return;
                }
                continue;
            }
            if (poppedSoon.test(shard)) {
                return;
            }
            if (state.compareAndSet(shard, IDLE, BUSY)) {
                startWithinWindow(shard);
                return;
            }
        }
    }

    private void startWithinWindow(int shard) {
        long waitNanos = lastStartNanos.get(shard) + TimeUnit.MILLISECONDS.toNanos(WINDOW_MS) - nanos.getAsLong();
        if (waitNanos > 0 && lastStartNanos.get(shard) != 0) {
            try {
                timer.schedule(() -> start(shard), waitNanos, TimeUnit.NANOSECONDS);
                return;
            } catch (RuntimeException e) {
                // the timer is shut down (the relay stops): peek now
            }
        }
        start(shard);
    }

    private void start(int shard) {
        lastStartNanos.set(shard, nanos.getAsLong());
        CompletionStage<Long> read;
        try {
            read = reader.earliest(shard);
        } catch (RuntimeException e) {
            finished(shard, Long.MIN_VALUE);
            return;
        }
        read.whenComplete((dueMs, error) -> finished(shard, error != null || dueMs == null ? Long.MIN_VALUE : dueMs));
    }

    private void finished(int shard, long dueMs) {
        if (dueMs != ShardWakeups.NONE) {
            found.found(shard, dueMs);
        }
        while (true) {
            if (state.compareAndSet(shard, BUSY, IDLE)) {
                return;
            }
            if (state.compareAndSet(shard, BUSY_AGAIN, BUSY)) {
                startWithinWindow(shard);
                return;
            }
        }
    }

    /** Parses a zset score as epoch ms: a fraction counts as the next whole millisecond (due only once reached). */
    static long dueMs(double score) {
        if (Double.isNaN(score)) {
            return Long.MIN_VALUE;
        }
        if (score >= (double) ShardWakeups.NONE) {
            return ShardWakeups.NONE;
        }
        return (long) Math.ceil(score);
    }
}
