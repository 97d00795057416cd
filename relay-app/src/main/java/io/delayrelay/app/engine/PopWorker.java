package io.delayrelay.app.engine;

import java.util.Arrays;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.IntPredicate;

import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * One worker thread of a business: {@link #run} → {@link #popOnce} → deliver, until shutdown. How it pops is its
 * {@link PopStrategy}'s; what follows a pop is the {@link BatchSettler}'s. The loop keeps the failures: every round
 * catches whatever it throws, counts and logs it with business and shard, and backs off; a stray interrupt is logged
 * and survived. It does not wait for the broker between pops, only for room in its {@link InFlightBudget}.
 */
final class PopWorker implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(PopWorker.class);
    private static final long MAX_ERROR_BACKOFF_MS = 5_000;

    private final int index;
    private final BooleanSupplier keepRunning;
    private final BusinessState state;
    private final ShardStore store;
    private final WakeSignal signal;
    private final ShardSchedule schedule;
    private final BatchSettler settler;
    /** The acks of earlier rounds, carried by this worker's pops. */
    private final AckCarrier acks;

    private final EventReporter events;
    private final RedisClock clock;
    private final LeaseReaper reaper;
    private final RateGovernor governor;
    /** Told when this worker starts and ends a pop and its publish (a worker stuck in one is wedged). */
    private final RelayAbility ability;
    /** What this worker has in flight; shards without a batch in flight are preferred. */
    private final InFlightBudget budget = new InFlightBudget();

    private final LingeredRounds lingered;
    private final ShardAtATime oneAtATime;
    /** The strategy chosen for {@link #chosenFor} and the store's {@link #chosenCombines}. */
    private PopStrategy strategy;

    private BusinessSpec chosenFor;
    private boolean chosenCombines;
    /** The round this iteration claimed: a failure of the iteration puts its shards back. */
    private Round popping;
    /** Failed iterations in a row other than a broker taking nothing; reset by a pop that worked. */
    private int failures;
    /** Batches in a row of which nothing reached the broker; reset by a batch that reached it. */
    private int brokerFailures;

    PopWorker(
            int index,
            BooleanSupplier keepRunning,
            BusinessState state,
            ShardStore store,
            WakeSignal signal,
            ShardSchedule schedule,
            BatchSettler settler,
            EventReporter events,
            RedisClock clock,
            ShardDivision division,
            RateGovernor governor,
            RelayAbility ability) {
        this.ability = ability;
        this.index = index;
        this.keepRunning = keepRunning;
        this.state = state;
        this.store = store;
        this.signal = signal;
        this.schedule = schedule;
        this.settler = settler;
        this.acks = settler.carrier();
        this.events = events;
        this.clock = clock;
        this.reaper = new LeaseReaper(store, events);
        this.governor = governor;
        // shards this worker passes over: quarantined, or another instance's in the fleet's division
        IntPredicate passedOver = shard -> state.quarantine().isQuarantined(shard) || !division.owns(shard);
        Sweep sweep =
                new Sweep(state, store, new SeatStore(store.redis()), schedule, signal, clock, division, passedOver);
        this.lingered = new LingeredRounds(state, schedule, signal, clock, sweep, passedOver);
        this.oneAtATime = new ShardAtATime(state, schedule, clock, governor, sweep, passedOver, budget::inFlight);
    }

    @Override
    public void run() {
        MDC.put("business", state.spec().name());
        try {
            while (keepRunning.getAsBoolean()) {
                popOnce();
            }
        } finally {
            MDC.clear();
        }
    }

    private void popOnce() {
        BusinessSpec spec = state.spec();
        popping = null;
        try {
            if (state.paused()) {
                signal.await(clock.nowMs() + spec.timing().maxIdle().toMillis(), clock);
                return;
            }
            long capped = governor.closedForMs(spec);
            if (capped > 0) {
                // max-rate: the fleet's bucket has no chunk for this instance yet; ask Redis again once it has
                RateGovernor.sleep(capped);
                return;
            }
            // the room first: a pop starts the entries' lease, which must not run out while waiting for room
            InFlightBudget.Reservation room =
                    budget.acquire(spec.batch().size(), spec.batch().bytes());
            Round round = strategy(spec).next(spec);
            if (round == null) {
                return;
            }
            popping = round;
            if (round.size() == 1) {
                MDC.put("shard", Integer.toString(round.shards()[0]));
            }
            ShardStore.Popped popped = pop(spec, round);
            if (popped != null) {
                deliver(spec, round, popped, room);
            }
        } catch (InterruptedException e) {
            interrupted(spec);
        } catch (Throwable e) {
            failed(spec, popping == null ? new int[0] : popping.shards(), e);
        } finally {
            ability.idle(index);
            MDC.remove("shard");
        }
    }

    /**
     * The strategy for this spec and store: rounds across shards on a standalone Redis without a rate cap, else one
     * shard at a time. Chosen again only when the spec is reloaded or the store found a cluster.
     */
    private PopStrategy strategy(BusinessSpec spec) {
        boolean combines = store.combinesShards();
        if (spec != chosenFor || combines != chosenCombines) {
            chosenFor = spec;
            chosenCombines = combines;
            strategy = combines && !spec.rateCapped() ? lingered : oneAtATime;
        }
        return strategy;
    }

    /**
     * Pops the round, carrying the acks waiting in the {@link AckCarrier}, and records what it found. When a round
     * of several shards fails because a shard's keys hold the wrong type, the call moved nothing: the shards are
     * popped one by one, so the bad one is quarantined and the others deliver (then null is returned).
     */
    private ShardStore.Popped pop(BusinessSpec spec, Round round) throws InterruptedException {
        List<ShardStore.Ack> carried = acks.take();
        ShardStore.Popped popped;
        try {
            ability.busy(index);
            popped = store.pop(spec, round, carried);
        } catch (RuntimeException | Error e) {
            // the acks must not wait for another pop
            acks.ackAlone(spec, carried);
            if (round.size() == 1 || !ShardQuarantine.isShardDataError(Exceptions.rootMessage(e))) {
                throw e;
            }
            log.warn(
                    "business={}: a pop of shards {} failed ({}); popping them one by one",
                    spec.name(),
                    Arrays.toString(round.shards()),
                    Exceptions.rootMessage(e));
            popping = null;
            popEach(spec, round.shards());
            return null;
        }
        acks.failedInPop(spec, popped);
        recordPop(spec, round, popped.results());
        return popped;
    }

    /** What a pop says of each shard: the clock, the schedule (by the strategy), late entries, expired leases. */
    private void recordPop(BusinessSpec spec, Round round, List<PopResult> results) {
        failures = 0;
        for (PopResult popped : results) {
            if (!popped.skipped() && popped.redisNowMs() > 0) {
                clock.observe(popped.redisNowMs());
            }
        }
        strategy.popped(spec, round, results);
        for (int i = 0; i < round.size(); i++) {
            PopResult popped = results.get(i);
            int shard = round.shards()[i];
            if (popped.skipped()) {
                continue;
            }
            // the late policy already moved these (dead set or dropped) in the pop: only reported here
            events.late(spec, shard, spec.late().drop(), popped.late());
            if (popped.expiredLeases() > 0) {
                // a holder died or lost the broker: its leases are taken back now, by whoever popped the shard,
                // and come due again after the retry delay
                reaper.reap(state, shard);
                schedule.lower(shard, clock.nowMs() + spec.retry().delay().toMillis());
            }
        }
    }

    /** Pops the shards one at a time, each on its own: a failure is counted, logged and quarantined per shard. */
    private void popEach(BusinessSpec spec, int[] shards) throws InterruptedException {
        for (int shard : shards) {
            MDC.put("shard", Integer.toString(shard));
            try {
                InFlightBudget.Reservation room =
                        budget.acquire(spec.batch().size(), spec.batch().bytes());
                Round round = Round.one(shard, false, spec.batch().size(), schedule.stamp(shard), clock.nowMs());
                deliver(spec, round, pop(spec, round), room);
            } catch (InterruptedException interrupted) {
                throw interrupted;
            } catch (Throwable failure) {
                failed(spec, new int[] {shard}, failure);
            } finally {
                MDC.remove("shard");
            }
        }
    }

    /**
     * Hands the round and its room to the settler, which publishes it, settles it once the broker confirmed (ack,
     * retry, dead letter) and frees the room. Nothing of it reaching the broker makes the worker back off.
     */
    private void deliver(BusinessSpec spec, Round round, ShardStore.Popped popped, InFlightBudget.Reservation room)
            throws InterruptedException {
        if (popped.results().stream().allMatch(PopResult::isEmpty)) {
            return;
        }
        if (!settler.deliver(spec, round, popped, room)) {
            throw new BrokerUnavailableException("nothing of the batch reached RabbitMQ (see the publish failures)");
        }
        brokerFailures = 0;
    }

    /** Nothing of a batch reached the broker: the worker backs off instead of popping more. */
    static final class BrokerUnavailableException extends RuntimeException {
        BrokerUnavailableException(String reason) {
            super("RabbitMQ unavailable, batch put back: " + reason, null, false, false);
        }
    }

    /**
     * An iteration that popped {@code shards} failed: counted, logged; a shard whose keys hold foreign data is set
     * aside, anything else backs off, longer with each failure in a row. A broker that takes nothing counts apart
     * from other failures: pops keep succeeding while it is down, and must not reset its back-off.
     */
    private void failed(BusinessSpec spec, int[] shards, Throwable e) {
        ability.idle(index);
        int shard = shards.length == 1 ? shards[0] : -1;
        events.error(spec, shard, e);
        for (int s : shards) {
            // its claim in the schedule went with the failed iteration: look at it again (after the back-off or the
            // quarantine)
            schedule.lower(s, clock.nowMs());
        }
        String cause = Exceptions.rootMessage(e);
        if (shard >= 0 && ShardQuarantine.isShardDataError(cause)) {
            state.quarantine().quarantine(spec, shard, cause);
            return;
        }
        int inARow = e instanceof BrokerUnavailableException ? ++brokerFailures : ++failures;
        log.warn(
                "business={} shard={}: worker iteration failed ({} in a row): {}",
                spec.name(),
                shard,
                inARow,
                cause,
                inARow == 1 ? e : null);
        try {
            signal.await(clock.nowMs() + backOffMs(spec, inARow), clock);
        } catch (InterruptedException interrupted) {
            interrupted(spec);
        }
    }

    /** max-idle doubled per failure in a row (the first failure already waits twice max-idle), at most 5 s. */
    static long backOffMs(BusinessSpec spec, int inARow) {
        return Math.min(MAX_ERROR_BACKOFF_MS, spec.timing().maxIdle().toMillis() << Math.min(inARow, 10));
    }

    /** Only a stop ends a worker: an interrupt while the worker should still run is logged and survived. */
    private void interrupted(BusinessSpec spec) {
        if (keepRunning.getAsBoolean()) {
            log.warn(
                    "business={}: worker {} interrupted while it should run; ignored (only a stop ends a worker)",
                    spec.name(),
                    Thread.currentThread().getName());
        }
    }
}
