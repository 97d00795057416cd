package io.delayrelay.app.engine;

import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

/**
 * Picks the next shard one worker pops:
 * <ol>
 *   <li>the shard it is draining: its last pop came back full, so more is due (the pop may skip its emptiness
 *       probe); it is claimed in the schedule as well, so that a write notified while that pop is under way is
 *       peeked and its due time outlives the pop's report;</li>
 *   <li>a shard the business's {@link ShardSchedule} knows to be due, claimed there so that the other workers look
 *       elsewhere: one without a batch of this worker in flight first, else one with (a shard's batches leave in pop
 *       order on the worker's one channel).</li>
 * </ol>
 * Quarantined shards are passed over. There is no walk over the shards: a sweep marks every shard due in the
 * schedule instead, so that each is claimed once and popped by one worker. One instance per worker thread: not
 * thread-safe.
 */
final class ShardPicker {

    /** Returned by {@link #next} when no shard is known to be due: the worker sleeps until the earliest is. */
    static final int NONE = -1;

    private final ShardSchedule schedule;
    private final LongSupplier redisNowMs;
    private int draining = NONE;
    /** The due time the schedule knew the shard {@link #next} returned last by: what puts it back unpopped. */
    private long claimedDue;

    /** Whether the shard {@link #next} returned last is known to have due entries. */
    private boolean lastKnownDue;

    ShardPicker(ShardSchedule schedule, LongSupplier redisNowMs) {
        this.schedule = schedule;
        this.redisNowMs = redisNowMs;
    }

    /** Whether a shard is being drained: its last pop came back full, {@link #next} returns it. */
    boolean draining() {
        return draining != NONE;
    }

    /** Pops {@code shard} next, known to have due entries (its last pop came back full). */
    void drain(int shard) {
        draining = shard;
    }

    /**
     * Whether the shard {@link #next} returned last is known to have due entries, so that its pop may skip the
     * emptiness probe.
     */
    boolean lastKnownDue() {
        return lastKnownDue;
    }

    /**
     * The due time the schedule knew the shard {@link #next} returned last by ({@code now} when it claimed any due
     * shard): a worker that does not pop it after all (the rate cap gave nothing) puts it back with this, keeping its
     * place.
     */
    long claimedDue() {
        return claimedDue;
    }

    /** The shard to pop next, or {@link #NONE}. */
    int next(int width, IntPredicate quarantined, IntPredicate busy) {
        return next(width, quarantined, busy, false);
    }

    /**
     * The shard to pop next, or {@link #NONE}; {@code earliestFirst} (a rate-capped business): the due shard with
     * the earliest known due time rather than any due one.
     */
    int next(int width, IntPredicate quarantined, IntPredicate busy, boolean earliestFirst) {
        int drained = draining;
        draining = NONE;
        lastKnownDue = false;
        if (drained != NONE && drained < width && !quarantined.test(drained)) {
            // claimed like any other pick: while this pop is under way the shard is not "popped soon", so a write
            // notified meanwhile is peeked instead of being left to a pop that may already have read the shard
            schedule.claim(drained);
            lastKnownDue = true;
            claimedDue = redisNowMs.getAsLong();
            return drained;
        }
        long now = redisNowMs.getAsLong();
        if (earliestFirst) {
            ShardSchedule.Earliest due = schedule.claimEarliestDue(now, quarantined);
            claimedDue = due.dueMs();
            return due.shard() >= 0 && due.shard() < width ? due.shard() : NONE;
        }
        claimedDue = now;
        int due = schedule.claimDue(now, quarantined.or(busy));
        if (due < 0) {
            due = schedule.claimDue(now, quarantined);
        }
        return due >= 0 && due < width ? due : NONE;
    }
}
