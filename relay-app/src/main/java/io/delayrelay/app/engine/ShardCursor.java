package io.delayrelay.app.engine;

import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.trigger.BusinessSpec;

/**
 * Picks the next shard one worker pops, in this order:
 * <ol>
 *   <li>the hinted shard: named by a producer's wake-up, the shard whose full batch suggests more is due, or the
 *       earliest known shard a sleep was aimed at;</li>
 *   <li>a shard the business's {@link ShardSchedule} knows to be due (claimed, so other workers look elsewhere);</li>
 *   <li>the next shard of this worker's block of the shared cursor: {@code INCRBY K:cursor sweep} reserves
 *       {@code sweep} consecutive positions at once (one Redis call per sweep, not per shard), taken mod the scan
 *       width, so instances and workers spread over the shards.</li>
 * </ol>
 * Quarantined shards are passed over; so are shards with a batch of this worker still in flight, except a hinted
 * one (a full batch's shard is drained on at once: its batches go out in pop order on the worker's channel). The block walk gives up
 * after one full turn. One instance per worker thread: not thread-safe.
 */
final class ShardCursor {

    /** Reserves {@code n} consecutive cursor positions of a business and returns the last one. */
    @FunctionalInterface
    interface CursorSource {
        long advance(DelayQueueKeys keys, int n);
    }

    /** Returned by {@link #next} when every shard is quarantined. */
    static final int NO_SHARD = -1;

    private final ShardSchedule schedule;
    private final CursorSource cursor;
    private final LongSupplier redisNowMs;
    private int hint = WakeSignal.NO_HINT;
    /** Whether the hint is known to have due entries (its last pop came back full). */
    private boolean hintDue;
    /** Whether the shard {@link #next} returned last is known to have due entries. */
    private boolean lastKnownDue;
    /** This worker's reserved block of cursor positions: next to use, and one past the last. */
    private long blockNext;

    private long blockEnd;

    ShardCursor(ShardSchedule schedule, CursorSource cursor, LongSupplier redisNowMs) {
        this.schedule = schedule;
        this.cursor = cursor;
        this.redisNowMs = redisNowMs;
    }

    /** Looks at {@code shard} next (ignored when {@link WakeSignal#NO_HINT}). */
    void hint(int shard) {
        if (shard != WakeSignal.NO_HINT) {
            hint = shard;
            hintDue = false;
        }
    }

    /** Looks at {@code shard} next, known to have due entries (its last pop came back full). */
    void hintDue(int shard) {
        hint = shard;
        hintDue = true;
    }

    /**
     * Whether the shard {@link #next} returned last is known to have due entries, so that its pop may skip the
     * emptiness probe.
     */
    boolean lastKnownDue() {
        return lastKnownDue;
    }

    /** Shards one worker covers before it may sleep: its share of one sweep over every scanned shard. */
    static int sweepLength(int width, int threads) {
        return (width + threads - 1) / threads;
    }

    /**
     * The shard to pop next. After one full turn over busy or quarantined shards: a busy one (the caller waits for
     * its batch to settle), or {@link #NO_SHARD} when every shard is quarantined (the caller must sleep, not spin).
     */
    int next(BusinessSpec spec, int width, IntPredicate quarantined, IntPredicate busy) {
        int hinted = hint;
        boolean hintedDue = hintDue;
        hint = WakeSignal.NO_HINT;
        hintDue = false;
        lastKnownDue = false;
        if (hinted != WakeSignal.NO_HINT && hinted < width && !quarantined.test(hinted)) {
            lastKnownDue = hintedDue;
            return hinted;
        }
        IntPredicate skip = quarantined.or(busy);
        int due = schedule.claimDue(redisNowMs.getAsLong(), skip);
        if (due >= 0 && due < width) {
            return due;
        }
        int busyFallback = NO_SHARD;
        for (int tries = 0; tries < width; tries++) {
            if (blockNext >= blockEnd) {
                int block = sweepLength(width, spec.threads());
                blockEnd = cursor.advance(spec.keys(), block) + 1;
                blockNext = blockEnd - block;
            }
            int shard = (int) Math.floorMod(blockNext++, (long) width);
            if (!quarantined.test(shard)) {
                if (!busy.test(shard)) {
                    return shard;
                }
                if (busyFallback == NO_SHARD) {
                    busyFallback = shard;
                }
            }
        }
        return busyFallback;
    }
}
