package io.delayrelay.app.engine;

import java.util.BitSet;
import java.util.List;
import java.util.function.IntPredicate;

import io.delayrelay.app.trigger.BusinessSpec;

/**
 * Pops every due shard of the worker's in one call, on a standalone Redis without a rate cap: a steady rate spread
 * over many shards then costs a pop per linger rather than one per message. With a lead (pop-ahead) there is no
 * linger: the round also takes what falls due within the lead, published at its due time.
 */
final class LingeredRounds implements PopStrategy {

    /** Most shards one pop carries (KEYS of pop.lua: six per shard). */
    static final int MAX_SHARDS_PER_POP = 64;
    /**
     * A known due time at or below this is not lingered on: a sweep's mark (0), a shard whose last pop came back full,
     * a failed peek ("look now").
     */
    private static final long NOT_LINGERED = 0;

    private final BusinessState state;
    private final ShardSchedule schedule;
    private final WakeSignal signal;
    private final RedisClock clock;
    private final Sweep sweep;
    private final IntPredicate passedOver;
    /** Shards whose last pop came back full: known to have due entries, no emptiness probe. */
    private final BitSet knownFull = new BitSet();

    LingeredRounds(
            BusinessState state,
            ShardSchedule schedule,
            WakeSignal signal,
            RedisClock clock,
            Sweep sweep,
            IntPredicate passedOver) {
        this.state = state;
        this.schedule = schedule;
        this.signal = signal;
        this.clock = clock;
        this.sweep = sweep;
        this.passedOver = passedOver;
    }

    /**
     * Waits until the earliest known due time plus the business's linger (woken earlier by an announcement, it looks
     * again), then claims every shard known to be due by then, earliest first. With a lead it pops at the earliest
     * due time and claims every shard known due within the lead.
     */
    @Override
    public Round next(BusinessSpec spec) throws InterruptedException {
        long now = clock.nowMs();
        ShardSchedule.Earliest earliest = schedule.earliest(passedOver);
        if (earliest.shard() < 0 || earliest.dueMs() > now) {
            sweep.idle(spec);
            return null;
        }
        long leadMs = spec.popsAhead() ? spec.timing().lead().toMillis() : 0;
        long popAt = earliest.dueMs() + (leadMs > 0 ? 0 : spec.timing().linger().toMillis());
        if (earliest.dueMs() > NOT_LINGERED && popAt > now) {
            if (!sweep.sweepIfDue(spec, state.idleMillis())) {
                long observed = signal.generation();
                signal.awaitChange(popAt, clock, observed);
            }
            return null;
        }
        List<ShardSchedule.Earliest> claimed =
                schedule.claimAllDue(clock.nowMs() + leadMs, passedOver, MAX_SHARDS_PER_POP);
        if (claimed.isEmpty()) {
            return null;
        }
        int[] shards = new int[claimed.size()];
        boolean[] known = new boolean[shards.length];
        long[] stamps = new long[shards.length];
        long[] claimedDue = new long[shards.length];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = claimed.get(i).shard();
            stamps[i] = schedule.stamp(shards[i]);
            claimedDue[i] = claimed.get(i).dueMs();
            // its last pop came back full, or a pop or a peek read an entry due by now (not a sweep's mark): the
            // pop skips the emptiness probe (EXISTS and two ZRANGEs), which would only say what is known
            known[i] = knownFull.get(shards[i]) || claimedDue[i] > NOT_LINGERED;
            knownFull.clear(shards[i]);
        }
        return new Round(shards, known, spec.batch().size(), leadMs, stamps, claimedDue);
    }

    /**
     * Records each shard; one that came back full is due at once, without a linger and without a probe. One the call
     * left out (its batch was used up before the shard's turn) is due at once too, and first among those next time
     * ({@link ShardSchedule#leftOutFrom}): put back at the due time it was claimed at, it came after every full shard
     * (known due at 0), so while the first shards of the order stayed full the last ones waited (in a CI run one shard
     * of 16 waited 8 s while the others were served on time).
     */
    @Override
    public void popped(BusinessSpec spec, Round round, List<PopResult> results) {
        boolean leftOut = false;
        for (int i = 0; i < round.size(); i++) {
            PopResult popped = results.get(i);
            int shard = round.shards()[i];
            if (popped.moreDue()) {
                knownFull.set(shard);
                schedule.record(shard, NOT_LINGERED, round.stamps()[i]);
            } else if (popped.skipped()) {
                if (round.knownDue()[i]) {
                    knownFull.set(shard);
                }
                schedule.lower(shard, NOT_LINGERED);
                if (!leftOut) {
                    schedule.leftOutFrom(shard);
                    leftOut = true;
                }
            } else {
                schedule.record(shard, popped.nextDueMs(), round.stamps()[i]);
            }
        }
    }
}
