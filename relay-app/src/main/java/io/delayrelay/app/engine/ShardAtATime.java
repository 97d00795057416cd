package io.delayrelay.app.engine;

import java.util.List;
import java.util.function.IntPredicate;

import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.MDC;

/**
 * Pops one shard per call: on a Redis Cluster (one call cannot span slots) and under a fleet-wide max-rate, whose
 * {@link RateGovernor} allows each pop. A shard that came back full is drained before the others; a rate-capped
 * business takes the earliest known due shard first instead.
 */
final class ShardAtATime implements PopStrategy {

    private final BusinessState state;
    private final ShardSchedule schedule;
    private final RedisClock clock;
    private final RateGovernor governor;
    private final Sweep sweep;
    private final ShardPicker picker;
    private final IntPredicate passedOver;
    /** Shards with a batch in flight: the others are preferred. */
    private final IntPredicate busy;

    ShardAtATime(
            BusinessState state,
            ShardSchedule schedule,
            RedisClock clock,
            RateGovernor governor,
            Sweep sweep,
            IntPredicate passedOver,
            IntPredicate busy) {
        this.state = state;
        this.schedule = schedule;
        this.clock = clock;
        this.governor = governor;
        this.sweep = sweep;
        this.picker = new ShardPicker(schedule, clock::nowMs);
        this.passedOver = passedOver;
        this.busy = busy;
    }

    /** Claims a due shard and takes the rate cap's allowance for it; a capped shard keeps its place. */
    @Override
    public Round next(BusinessSpec spec) throws InterruptedException {
        int shard = picker.next(state.scanWidth(), passedOver, busy, spec.rateCapped());
        if (shard == ShardPicker.NONE) {
            sweep.idle(spec);
            return null;
        }
        MDC.put("shard", Integer.toString(shard));
        int allowance;
        try {
            allowance = governor.take(spec, spec.batch().size());
        } catch (RuntimeException e) {
            // its claim goes with the failed round: look at it again after the back-off
            schedule.lower(shard, clock.nowMs());
            throw e;
        }
        if (allowance == 0) {
            // capped: the shard is still due, with its place in the earliest-first order
            schedule.lower(shard, picker.claimedDue());
            return null;
        }
        return Round.one(shard, picker.lastKnownDue(), allowance, schedule.stamp(shard), picker.claimedDue());
    }

    /** Records the shard and gives back the allowance it did not use; a full shard is drained next. */
    @Override
    public void popped(BusinessSpec spec, Round round, List<PopResult> results) {
        PopResult popped = results.get(0);
        int shard = round.shards()[0];
        schedule.record(shard, popped.nextDueMs(), round.stamps()[0]);
        governor.giveBack(spec, round.limit() - popped.entries().size());
        if (popped.moreDue() && !spec.rateCapped()) {
            // (a capped business picks the earliest known due shard instead: this one is known due again)
            picker.drain(shard);
        }
    }
}
