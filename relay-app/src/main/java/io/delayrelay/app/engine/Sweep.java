package io.delayrelay.app.engine;

import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;
import java.util.stream.IntStream;

import io.delayrelay.app.trigger.BusinessSpec;

/**
 * A worker's idle time: the safety sweep that finds writes nothing announced, and the sleep until the earliest known
 * due time. Both pop strategies idle the same way, so the policy lives here once.
 */
final class Sweep {

    private final BusinessState state;
    private final ShardStore store;
    private final SeatStore seats;
    private final ShardSchedule schedule;
    private final WakeSignal signal;
    private final RedisClock clock;
    private final ShardDivision division;
    /** Shards the worker passes over: quarantined, or another instance's in the fleet's division. */
    private final IntPredicate passedOver;

    Sweep(
            BusinessState state,
            ShardStore store,
            SeatStore seats,
            ShardSchedule schedule,
            WakeSignal signal,
            RedisClock clock,
            ShardDivision division,
            IntPredicate passedOver) {
        this.state = state;
        this.store = store;
        this.seats = seats;
        this.schedule = schedule;
        this.signal = signal;
        this.clock = clock;
        this.division = division;
        this.passedOver = passedOver;
    }

    /**
     * Sweeps when the idle interval passed since the last sweep; else sleeps until the earliest entry this relay
     * knows of falls due, at most the idle interval. Any wake-up (a producer's, a notification's peek, a retry put
     * back) ends the sleep, even one that came while this method decided how long to sleep: the worker then looks at
     * the schedule again, which holds every announced due time (a wake-up names only the latest).
     */
    void idle(BusinessSpec spec) throws InterruptedException {
        long idleMs = state.idleMillis();
        if (sweepIfDue(spec, idleMs)) {
            return;
        }
        long observed = signal.generation();
        long now = clock.nowMs();
        ShardSchedule.Earliest earliest = schedule.earliest(passedOver);
        long until = Math.min(earliest.dueMs(), now + idleMs);
        signal.awaitChange(Math.max(until, now + 1), clock, observed);
    }

    /**
     * Marks every shard due once per idle interval (max-idle when polling, the safety sweep with keyspace
     * notifications), whatever the load: a write nothing announced is found within one interval. Each instance
     * sweeps the shards the division gives it; without the division and with notifications, one instance per round
     * sweeps them all. So the idle cost does not grow with the number of instances. On a standalone Redis one
     * multi-key {@code EXISTS} of those shards' keys comes first: when all are empty (the idle case) nothing is
     * marked and nothing popped. Returns whether it swept.
     */
    boolean sweepIfDue(BusinessSpec spec, long idleMs) {
        long interval = idleMs * 9 / 10;
        if (!schedule.sweepDue(System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(interval))) {
            return false;
        }
        if (state.sweepsShared() && !division.divides() && !seats.claimRound(spec.keys(), "sweep", interval)) {
            return false;
        }
        if (store.combinesShards() && !store.holdsAny(spec.keys(), ownedShards())) {
            // every shard of this instance's is empty: one EXISTS instead of a pop probing each
            return true;
        }
        schedule.markAllDue();
        signal.wakeAll();
        return true;
    }

    /** The shards this worker pops: its instance's share of the scan width, quarantined ones left out. */
    private int[] ownedShards() {
        return IntStream.range(0, state.scanWidth())
                .filter(s -> !passedOver.test(s))
                .toArray();
    }
}
