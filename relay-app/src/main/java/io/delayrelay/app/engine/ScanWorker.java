package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntPredicate;
import java.util.stream.IntStream;

import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * One worker thread of a business: pops the shards the business's {@link ShardSchedule} knows to be due and hands
 * their entries to the settler, which publishes them with confirms and acks what the broker confirmed. When no
 * shard is known to be due it sleeps until the earliest known due time, at most the idle interval (max-idle when
 * polling, the safety sweep with keyspace notifications), or until a producer's wake-up or a notification's peek
 * announces an earlier entry. At the end of an idle interval nothing announced, it sweeps: every shard is marked due
 * and popped once. It pops only the shards the fleet's {@link ShardDivision} gives this instance, so each instance
 * sweeps its own (without the division, one instance per round sweeps them all when notifications are on).
 * <p>
 * It does not wait for the broker between pops: batches await their confirms while the worker pops and publishes
 * the next ones, within its {@link InFlightBudget}. One shard's batches go out on the worker's one channel in pop
 * order, and the broker keeps a channel's order, so with one thread a shard's entries arrive in due order (an entry
 * that is retried comes after the later ones).
 * <p>
 * On a standalone Redis one pop carries every shard of this instance's known due by the earliest known due time
 * plus the business's linger (one pop.lua call, one publish for all of them; their acks ride on the next pop, see
 * {@link AckCarrier}), so that a steady rate spread over many shards costs a pop per linger rather than one per
 * message; on a Redis Cluster each pop takes one shard. With a lead (pop-ahead) there is no linger: at the earliest
 * known due time the pop also takes every entry of those shards due within the lead (Redis time), and the worker
 * publishes each at its due time ({@link DueGate}, {@link BatchSettler#deliverAhead}), so a round lasts about the
 * lead and costs no lag. A business with a fleet-wide {@code max-rate} pops one shard at a time, no more than its
 * {@link RateGovernor} allows, earliest known due shard first; while the bucket is empty its workers sleep.
 * <p>
 * Longer than 300 lines because it holds both ways of popping (several shards after a linger, one shard for a drain,
 * the rate cap and a cluster), and the fallback that finds a bad shard among several: they share the claim, record
 * and failure handling that must stay consistent with each other.
 * <p>
 * The loop runs until shutdown and nothing else: every iteration catches whatever it throws (errors included),
 * counts and logs it with business and shard, and backs off; a stray interrupt is logged and survived.
 */
final class ScanWorker implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(ScanWorker.class);
    private static final long MAX_ERROR_BACKOFF_MS = 5_000;
    /** Most shards one pop carries (KEYS of pop.lua: six per shard). */
    static final int MAX_SHARDS_PER_POP = 64;
    /**
     * A known due time at or below this is not lingered on: a sweep's mark (0), a shard whose last pop came back full,
     * a failed peek ("look now").
     */
    private static final long NOT_LINGERED = 0;

    private final int index;
    private final BooleanSupplier keepRunning;
    private final BusinessState state;
    private final ShardStore store;
    private final WakeSignal signal;
    private final ShardSchedule schedule;
    private final BatchSettler settler;
    /** Pops carrying the acks of earlier rounds. */
    private final AckCarrier acks;

    private final EventReporter events;
    private final RedisClock clock;
    private final ShardPicker picker;
    private final LeaseReaper reaper;
    private final RateGovernor governor;
    private final ShardDivision division;
    /** Told when this worker starts and ends a pop and its publish (a worker stuck in one is wedged). */
    private final RelayAbility ability;
    /** Shards this worker passes over: quarantined, or another instance's in the fleet's division. */
    private final IntPredicate passedOver;
    /** What this worker has in flight; shards without a batch in flight are preferred. */
    private final InFlightBudget budget = new InFlightBudget();
    /** Shards whose last pop (of several) came back full: known to have due entries, no emptiness probe. */
    private final BitSet knownFull = new BitSet();
    /** The shards this iteration's pop of several claimed: a failure of the iteration puts them back. */
    private int[] popping = new int[0];
    /** Failed iterations in a row other than a broker taking nothing; reset by a pop that worked. */
    private int failures;
    /** Batches in a row of which nothing reached the broker; reset by a batch that reached it. */
    private int brokerFailures;

    ScanWorker(
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
        this.picker = new ShardPicker(schedule, clock::nowMs);
        this.reaper = new LeaseReaper(store, events);
        this.governor = governor;
        this.division = division;
        this.passedOver = shard -> state.quarantine().isQuarantined(shard) || !division.owns(shard);
    }

    @Override
    public void run() {
        MDC.put("business", state.spec().name());
        try {
            while (keepRunning.getAsBoolean()) {
                runOnce();
            }
        } finally {
            MDC.clear();
        }
    }

    private void runOnce() {
        BusinessSpec spec = state.spec();
        int shard = ShardPicker.NONE;
        popping = new int[0];
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
            if (!spec.rateCapped() && store.combinesShards() && !picker.draining()) {
                popDueShards(spec);
                return;
            }
            // the budget first: a pop starts the entries' lease, which must not run out while waiting for room
            InFlightBudget.Reservation reservation =
                    budget.acquire(spec.batch().size(), spec.batch().bytes());
            PopResult popped = null;
            try {
                shard = picker.next(state.scanWidth(), passedOver, budget::inFlight, spec.rateCapped());
                if (shard == ShardPicker.NONE) {
                    reservation.release();
                    sleepUntilDue(spec);
                    return;
                }
                MDC.put("shard", Integer.toString(shard));
                int allowance = governor.take(spec, spec.batch().size());
                if (allowance == 0) {
                    // capped: the shard is still due, with its place in the earliest-first order
                    schedule.lower(shard, picker.claimedDue());
                    return;
                }
                popped = pop(spec, shard, allowance);
                governor.giveBack(spec, allowance - popped.entries().size());
            } finally {
                if (popped == null || popped.isEmpty()) {
                    // nothing to hand to the settler: the room is free again (a second release does nothing)
                    reservation.release();
                }
            }
            if (!popped.isEmpty()) {
                deliver(spec, shard, popped, reservation);
            }
        } catch (InterruptedException e) {
            interrupted(spec);
        } catch (Throwable e) {
            if (shard == ShardPicker.NONE && popping.length > 0) {
                failed(spec, popping, e);
            } else {
                failed(spec, shard, e);
            }
        } finally {
            ability.idle(index);
            MDC.remove("shard");
        }
    }

    /**
     * Pops every due shard of this worker's in one call (standalone Redis, no rate cap): waits until the earliest
     * known due time plus the business's linger (woken earlier by an announcement, it looks again), claims every
     * shard known to be due by then, earliest first, and pops them together; the entries go out as one batch. A
     * shard whose last pop came back full is drained on its own ({@link ShardPicker#drain}), as without combining.
     * When the call fails because a shard's keys hold the wrong type, the shards are popped one by one, so that the
     * bad one is found and quarantined and the others deliver.
     */
    private void popDueShards(BusinessSpec spec) throws InterruptedException {
        long now = clock.nowMs();
        ShardSchedule.Earliest earliest = schedule.earliest(passedOver);
        if (earliest.shard() < 0 || earliest.dueMs() > now) {
            sleepUntilDue(spec);
            return;
        }
        // pop-ahead: pop at the earliest due time, taking what falls due within the lead (no linger)
        long leadMs = spec.popsAhead() ? spec.timing().lead().toMillis() : 0;
        long popAt = earliest.dueMs() + (leadMs > 0 ? 0 : spec.timing().linger().toMillis());
        if (earliest.dueMs() > NOT_LINGERED && popAt > now) {
            if (sweep(spec, state.idleMillis())) {
                return;
            }
            long observed = signal.generation();
            signal.awaitChange(popAt, clock, observed);
            return;
        }
        InFlightBudget.Reservation reservation =
                budget.acquire(spec.batch().size(), spec.batch().bytes());
        List<ShardSchedule.Earliest> claimed = List.of();
        int[] shards;
        boolean handed = false;
        try {
            // with a lead, every shard known due within it: the pop takes their entries due by then too
            claimed = schedule.claimAllDue(clock.nowMs() + leadMs, passedOver, MAX_SHARDS_PER_POP);
            if (claimed.isEmpty()) {
                return;
            }
            shards = new int[claimed.size()];
            popping = shards;
            boolean[] known = new boolean[claimed.size()];
            long[] stamps = new long[claimed.size()];
            for (int i = 0; i < shards.length; i++) {
                shards[i] = claimed.get(i).shard();
                stamps[i] = schedule.stamp(shards[i]);
                // its last pop came back full, or a pop or a peek read an entry due by now (not a sweep's mark):
                // the pop skips the emptiness probe (EXISTS and two ZRANGEs), which would only say what is known
                known[i] = knownFull.get(shards[i]) || claimed.get(i).dueMs() > NOT_LINGERED;
                knownFull.clear(shards[i]);
            }
            if (shards.length == 1) {
                MDC.put("shard", Integer.toString(shards[0]));
            }
            List<PopResult> results;
            long receivedNanos;
            try {
                ability.busy(index);
                results = acks.pop(spec, shards, known, spec.batch().size(), leadMs);
                // (the reply is in hand: DueGate's offset counts from here)
                receivedNanos = System.nanoTime();
            } catch (RuntimeException e) {
                if (shards.length == 1 || !ShardQuarantine.isShardDataError(Exceptions.rootMessage(e))) {
                    throw e;
                }
                // one shard's keys hold foreign data, and the call moved nothing: find it by popping one at a time
                log.warn(
                        "business={}: a pop of shards {} failed ({}); popping them one by one",
                        spec.name(),
                        Arrays.toString(shards),
                        Exceptions.rootMessage(e));
                reservation.release();
                handed = true;
                popping = new int[0];
                popEach(spec, shards);
                return;
            }
            failures = 0;
            long redisNowMs = 0;
            List<BatchSettler.Part> parts = new ArrayList<>(shards.length);
            for (int i = 0; i < shards.length; i++) {
                PopResult popped = results.get(i);
                int shard = shards[i];
                if (popped.skipped()) {
                    // the call's batch was used up before this shard: still due, at its place in the order
                    schedule.lower(shard, claimed.get(i).dueMs());
                    continue;
                }
                if (popped.redisNowMs() > 0) {
                    clock.observe(popped.redisNowMs());
                }
                if (popped.moreDue()) {
                    // more is due at once: no linger before the next pop of it
                    knownFull.set(shard);
                    schedule.record(shard, NOT_LINGERED, stamps[i]);
                } else {
                    schedule.record(shard, popped.nextDueMs(), stamps[i]);
                }
                events.late(spec, shard, spec.late().drop(), popped.late());
                if (popped.expiredLeases() > 0) {
                    reaper.reap(state, shard);
                    schedule.lower(shard, clock.nowMs() + spec.retry().delay().toMillis());
                }
                if (!popped.isEmpty()) {
                    parts.add(new BatchSettler.Part(shard, popped));
                    redisNowMs = Math.max(redisNowMs, popped.redisNowMs());
                }
            }
            if (parts.isEmpty()) {
                return;
            }
            handed = true;
            boolean reached;
            if (leadMs > 0 && aheadOf(parts, redisNowMs)) {
                // some entries are not due yet: each goes out at its due time (the worker waits for it)
                reached = settler.deliverAhead(spec, parts, reservation, new DueGate(redisNowMs, receivedNanos, clock));
            } else {
                reached = settler.deliverMany(spec, parts, reservation);
            }
            if (!reached) {
                throw new BrokerUnavailableException(
                        "nothing of the batch reached RabbitMQ (see the publish failures)");
            }
            brokerFailures = 0;
        } finally {
            if (!handed) {
                reservation.release();
            }
            MDC.remove("shard");
        }
    }

    /** Whether a pop handed out an entry due after its Redis time (taken ahead, within the lead). */
    private static boolean aheadOf(List<BatchSettler.Part> parts, long redisNowMs) {
        for (BatchSettler.Part part : parts) {
            for (PopResult.Entry e : part.popped().entries()) {
                if (e.dueAtMs() > redisNowMs) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Pops the shards one at a time, each on its own: a failure is counted, logged and (foreign data) quarantined
     * per shard. They were claimed by a pop of several that failed.
     */
    private void popEach(BusinessSpec spec, int[] shards) throws InterruptedException {
        for (int shard : shards) {
            MDC.put("shard", Integer.toString(shard));
            try {
                InFlightBudget.Reservation reservation =
                        budget.acquire(spec.batch().size(), spec.batch().bytes());
                PopResult popped = null;
                try {
                    popped = pop(spec, shard, spec.batch().size());
                } finally {
                    if (popped == null || popped.isEmpty()) {
                        reservation.release();
                    }
                }
                if (!popped.isEmpty()) {
                    deliver(spec, shard, popped, reservation);
                }
            } catch (InterruptedException interrupted) {
                throw interrupted;
            } catch (Throwable failure) {
                failed(spec, new int[] {shard}, failure);
            } finally {
                MDC.remove("shard");
            }
        }
    }

    /** Pops the shard, records what the pop says of its next due time, and takes back the expired leases it saw. */
    private PopResult pop(BusinessSpec spec, int shard, int limit) {
        long stamp = schedule.stamp(shard);
        ability.busy(index);
        PopResult popped = acks.pop(spec, new int[] {shard}, new boolean[] {picker.lastKnownDue()}, limit)
                .get(0);
        if (popped.redisNowMs() > 0) {
            clock.observe(popped.redisNowMs());
        }
        schedule.record(shard, popped.nextDueMs(), stamp);
        failures = 0;
        // the late policy already moved these (dead set or dropped) in the pop: only reported here
        events.late(spec, shard, spec.late().drop(), popped.late());
        if (popped.expiredLeases() > 0) {
            // a holder died or lost the broker: its leases are taken back now, by whoever popped the shard, and
            // come due again after the retry delay
            reaper.reap(state, shard);
            schedule.lower(shard, clock.nowMs() + spec.retry().delay().toMillis());
        }
        return popped;
    }

    /**
     * Hands the batch and its reservation to the settler, which publishes it, settles it once the broker confirmed
     * (ack, retry, dead letter) and frees its room. Nothing of it reaching the broker makes the worker back off.
     */
    private void deliver(BusinessSpec spec, int shard, PopResult popped, InFlightBudget.Reservation reservation) {
        if (!settler.deliver(spec, shard, popped, reservation)) {
            throw new BrokerUnavailableException("nothing of the batch reached RabbitMQ (see the publish failures)");
        }
        brokerFailures = 0;
        if (popped.moreDue() && !spec.rateCapped()) {
            // (a capped business picks the earliest known due shard instead: this one is known due again)
            picker.drain(shard);
        }
    }

    /**
     * Sweeps when the idle interval passed since the last sweep; else sleeps until the earliest entry this relay
     * knows of falls due, at most the idle interval. Any wake-up (a producer's, a notification's peek, a retry put
     * back) ends the sleep, even one that came while this method decided how long to sleep: the worker then looks at
     * the schedule again, which holds every announced due time (a wake-up names only the latest).
     */
    private void sleepUntilDue(BusinessSpec spec) throws InterruptedException {
        long idleMs = state.idleMillis();
        if (sweep(spec, idleMs)) {
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
     * notifications), whatever the load: a producer's write that nothing announced (no notification, or one lost) is
     * found within one interval. Each instance sweeps the shards the division gives it (without the division and
     * with notifications, one instance per round sweeps every shard), so the idle cost does not grow with the number
     * of instances. On a standalone Redis one multi-key {@code EXISTS} of those shards' keys comes first: when all
     * are empty (the idle case) nothing is marked and nothing popped. Returns whether it swept.
     */
    private boolean sweep(BusinessSpec spec, long idleMs) {
        long interval = idleMs * 9 / 10;
        if (!schedule.sweepDue(System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(interval))) {
            return false;
        }
        // with the fleet dividing the shards each instance sweeps its own; else one instance per round sweeps all
        if (state.sweepsShared() && !division.divides() && !store.claimRound(spec.keys(), "sweep", interval)) {
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

    /** Nothing of a batch reached the broker: the worker backs off instead of popping more. */
    static final class BrokerUnavailableException extends RuntimeException {
        BrokerUnavailableException(String reason) {
            super("RabbitMQ unavailable, batch put back: " + reason, null, false, false);
        }
    }

    /**
     * An iteration failed: counted, logged; a shard whose keys hold foreign data is set aside, anything else backs
     * off, longer with each failure in a row. A broker that takes nothing counts apart from other failures: pops
     * keep succeeding while it is down, and must not reset its back-off.
     */
    private void failed(BusinessSpec spec, int shard, Throwable e) {
        failed(spec, shard >= 0 ? new int[] {shard} : new int[0], e);
    }

    /** Like {@link #failed(BusinessSpec, int, Throwable)} for an iteration that popped {@code shards} (one call). */
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
