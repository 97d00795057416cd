package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Set;

import io.delayrelay.app.engine.wake.ShardWakeups;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One business in the engine: its state, its worker pool, its batch settler, and what its workers share (the wake
 * signal, the known due times). Starts, stops and re-configures them together.
 * <p>
 * Longer than 300 lines because it is where a business's parts meet: start and stop, topology adoption, hot reload,
 * the wake-up sources' port ({@link ShardWakeups}) and its seat in the fleet's {@link ShardDivision}; the work of
 * each lives in its own class.
 */
public final class BusinessRelay implements ShardWakeups {

    private static final Logger log = LoggerFactory.getLogger(BusinessRelay.class);

    private final ShardStore store;
    private final WakeSignal signal = new WakeSignal();
    private final ShardSchedule schedule;
    private final BusinessState state;
    private final BatchSettler settler;
    private final WorkerPool workers;
    private final EventReporter events;
    private final RedisClock clock;
    private final RateGovernor governor;
    private final ShardDivision division;
    /** Whether this instance can relay the business now: fed by the workers and the settler, read by the seats. */
    private final RelayAbility ability = new RelayAbility(System::nanoTime);

    private final SeatKeeper seats;
    /**
     * Guards a shard's poll interval and the polled count reported after it, so the last count reported is the one in
     * force. Not this relay's monitor: a seat renewal holds that across its Redis calls, and the wake-up source calls
     * {@link #pollEvery} under its own lock on its check thread, which must not wait for Redis.
     */
    private final Object polledLock = new Object();
    /** The polled-shard count last reported (the gauge starts at 0). */
    private int reportedPolled;

    /** A business relay that pops every shard (no division across the fleet). */
    BusinessRelay(
            BusinessSpec spec, ShardStore store, BatchPublisher publisher, EventReporter events, RedisClock clock) {
        this(
                spec,
                store,
                publisher,
                events,
                clock,
                new ShardDivision("-", new ShardDivision.Settings(false, Duration.ZERO), System::nanoTime));
    }

    BusinessRelay(
            BusinessSpec spec,
            ShardStore store,
            BatchPublisher publisher,
            EventReporter events,
            RedisClock clock,
            ShardDivision division) {
        this.store = store;
        this.events = events;
        this.clock = clock;
        this.division = division;
        this.schedule = new ShardSchedule(clock::nowMs);
        this.state = new BusinessState(spec, new ShardQuarantine(System::nanoTime), this::stateChanged);
        this.schedule.ensureWidth(state.scanWidth());
        this.governor = new RateGovernor(store, events);
        this.settler =
                new BatchSettler(spec.threadNamePrefix(), store, publisher, events, clock, this::retryAt, ability);
        this.seats = new SeatKeeper(division, ability, store, publisher, state, events, this::sweepGained);
        this.workers = new WorkerPool(
                state,
                (index, keepRunning) -> new ScanWorker(
                        index,
                        keepRunning,
                        state,
                        store,
                        signal,
                        schedule,
                        settler,
                        events,
                        clock,
                        division,
                        governor,
                        ability));
    }

    void start() {
        workers.start();
        BusinessSpec spec = state.spec();
        log.info(
                "business={} started: {} threads, {} shards, exchange '{}', routing key '{}', source key '{}'",
                spec.name(),
                spec.threads(),
                spec.shards(),
                spec.route().exchange(),
                spec.route().routingKey(),
                spec.keys().sourceKey());
    }

    /**
     * Stops popping; waits up to {@code timeout} for workers and published batches, then leaves them to the lease.
     * The seat is given up before (see {@link RelayEngine#stop}), or here when it was not.
     */
    void stop(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        workers.stop(deadline, signal::wakeAll, timeout);
        seats.leave();
        settler.shutdown(state.spec().name(), deadline);
    }

    /** Sweeps (pops once) the shards that became this instance's. */
    private void sweepGained(List<Integer> gained) {
        for (int shard : gained) {
            schedule.lower(shard, 0);
        }
        signal.wakeAll();
    }

    /**
     * Records in {@code K:meta} the shard count (unless a configuration with a higher topology version recorded its
     * own) and scans every shard count {@code K:meta} records.
     */
    void adoptTopology(long topologyVersion) {
        adopt(topologyVersion, 0);
    }

    /**
     * Like {@link #adoptTopology(long)}, at start: when {@code K:meta} records no shard count (never written, or lost
     * while the relay was down), producers have been hashing into {@code producersFallback} (relay-api's
     * default-shards). When a shard beyond this count, up to the fallback, holds anything, the fallback count is
     * drained like an earlier one, so nothing they wrote is left unscanned; a new business costs no extra scanning.
     */
    void adoptTopology(long topologyVersion, int producersFallback) {
        BusinessSpec spec = state.spec();
        adopt(topologyVersion, producersWroteBeyond(spec, producersFallback) ? producersFallback : 0);
    }

    /**
     * {@code K:meta} lost its shard count while the relay runs: producers hash into {@code producersFallback} from
     * now until they read it again, so that count is drained (when larger) whatever its shards hold now.
     */
    void recordLostTopology(long topologyVersion, int producersFallback) {
        adopt(topologyVersion, producersFallback);
    }

    private void adopt(long topologyVersion, int producersFallback) {
        ShardStore.Reshard meta = store.reshard(state.spec(), topologyVersion, producersFallback);
        warnIfNotApplied(state.spec(), meta);
        state.followTopology(meta.recorded());
    }

    /** Whether K:meta records no shard count and a shard in {@code [shards, fallback)} holds anything. */
    private boolean producersWroteBeyond(BusinessSpec spec, int fallback) {
        if (fallback <= spec.shards() || store.recordedTopology(spec.keys()) != null) {
            return false;
        }
        for (int shard = spec.shards(); shard < fallback; shard++) {
            if (store.holdsAnything(spec.keys(), shard)) {
                return true;
            }
        }
        return false;
    }

    /** An instance whose configuration is older than the one that recorded K:meta's shard count says so. */
    private static void warnIfNotApplied(BusinessSpec spec, ShardStore.Reshard meta) {
        if (!meta.applied()) {
            log.warn(
                    "business={}: shards {} not recorded in {}: a configuration with a higher relay.topology-version "
                            + "recorded shards {}; following it (this instance scans {} shards)",
                    spec.name(),
                    spec.shards(),
                    spec.keys().meta(),
                    meta.shards(),
                    meta.scanWidth(spec.shards()));
        }
    }

    /**
     * Applies new settings at runtime (hot reload). A changed shard count is recorded in {@code K:meta}; retired
     * shards keep being scanned until the topology keeper finds them empty.
     */
    synchronized void update(BusinessSpec next, long topologyVersion) {
        BusinessSpec previous = state.spec();
        int[] recorded = new int[0];
        if (next.shards() != previous.shards()) {
            ShardStore.Reshard meta = store.reshard(next, topologyVersion);
            warnIfNotApplied(next, meta);
            recorded = meta.recorded();
        }
        state.apply(next, recorded);
        if (next.shards() != previous.shards()) {
            log.info(
                    "business={} shards {} -> {}; scanning {} shards until the retired ones are empty",
                    next.name(),
                    previous.shards(),
                    next.shards(),
                    state.scanWidth());
        }
        workers.adjust();
        signal.wakeAll();
    }

    /** Starts again workers that died; each restart is counted. */
    void restartDeadWorkers() {
        BusinessSpec spec = state.spec();
        for (String worker : workers.adjust()) {
            log.warn("business={}: worker {} restarted", spec.name(), worker);
            events.emit(spec, -1, e -> e.workerRestarted(spec, worker));
        }
    }

    /** The configuration in force. */
    public BusinessSpec spec() {
        return state.spec();
    }

    /** Runtime state: scan width, pause, quarantined shards. */
    public BusinessState state() {
        return state;
    }

    /** Shards currently set aside because their keys hold unexpected data. */
    public Set<Integer> quarantinedShards() {
        return state.quarantinedShards();
    }

    /** Live worker threads. */
    public int liveWorkers() {
        return workers.live();
    }

    /**
     * An entry of {@code shard} is due at {@code dueMs}: announced by a producer's wake-up, read by a keyspace
     * notification's peek, or put back for a retry by this instance (nothing announces those). The workers are woken
     * only when that is earlier than what they knew.
     */
    @Override
    public void announce(int shard, long dueMs) {
        if (!division.owns(shard)) {
            // another instance pops it; the shard is swept when it becomes this instance's
            return;
        }
        if (schedule.lower(shard, dueMs)) {
            signal.wake(shard, dueMs);
        }
    }

    /**
     * An entry of {@code shard} was put back by this instance for a retry at {@code dueMs}. When the shard is no
     * longer this instance's (handed over while its batch awaited the broker), its current owner is told on
     * {@code K:wake}, so the retry is popped at its time, not at the next sweep. Never throws.
     */
    private void retryAt(int shard, long dueMs) {
        if (division.owns(shard)) {
            announce(shard, dueMs);
            return;
        }
        try {
            store.announceToFleet(state.spec().keys(), shard, dueMs);
        } catch (RuntimeException e) {
            log.debug(
                    "business={} shard={}: telling the fleet of a retry failed",
                    state.spec().name(),
                    shard,
                    e);
        }
    }

    /**
     * Also true for a shard another instance pops: a peek of it here would be wasted. Otherwise true only when the
     * shard is about to be popped: its known due time is within {@code ms} (that pop reads whatever the write added).
     * Not within the business's round: a worker pops a shard at its known due time (plus the linger), so a write due
     * before that would wait for it, up to the lead or twice the linger. A claimed shard is peeked (its pop may have
     * read it before the write).
     */
    @Override
    public boolean popsWithin(int shard, long ms) {
        return !division.owns(shard) || schedule.knownDue(shard) <= clock.nowMs() + ms;
    }

    @Override
    public void pollEvery(int shard, long everyMs) {
        synchronized (polledLock) {
            schedule.pollEvery(shard, everyMs);
            reportPolled();
        }
        if (everyMs > 0) {
            signal.wake(shard, clock.nowMs() + everyMs);
        }
    }

    /** Reports how many shards are polled now (the gauge); under {@link #polledLock}, so the last count wins. */
    private void reportPolled() {
        int polled = schedule.polledCount();
        if (polled != reportedPolled) {
            reportedPolled = polled;
            BusinessSpec spec = state.spec();
            events.emit(spec, -1, e -> e.shardsPolled(spec, polled));
        }
    }

    @Override
    public BitSet ownedShards() {
        int width = state.scanWidth();
        BitSet owned = new BitSet(width);
        for (int shard = 0; shard < width; shard++) {
            if (division.owns(shard)) {
                owned.set(shard);
            }
        }
        return owned;
    }

    /**
     * Renews this instance's seat in the fleet's division of the shards, or gives it up while this instance cannot
     * relay the business ({@link SeatKeeper}); shards that became this instance's are swept at once. Never throws.
     */
    void renewSeat() {
        seats.renew();
    }

    /**
     * Gives up the seat at a graceful stop and returns whether another instance holds one: the workers then relay on
     * for one renewal period plus a margin, until every other instance has taken its part of this one's shards.
     */
    boolean leaveSeat() {
        return seats.leave();
    }

    /**
     * This instance's place in the division, for the fleet's heartbeat: "seat 5, rank 1 of 3, shards 1 4 7 10",
     * "given up: reason", or "every shard" (division off, alone, or not renewed for a whole TTL).
     */
    public String seatSummary() {
        String givenUp = division.givenUp();
        if (givenUp != null) {
            return "given up: " + givenUp;
        }
        ShardDivision.Share share = division.effective();
        if (share.of() <= 1) {
            return "every shard";
        }
        StringBuilder text = new StringBuilder()
                .append("seat ")
                .append(share.seat())
                .append(", rank ")
                .append(share.rank())
                .append(" of ")
                .append(share.of())
                .append(", shards");
        BitSet owned = ownedShards();
        owned.stream().forEach(s -> text.append(' ').append(s));
        return text.toString();
    }

    /** This instance's share of the shards (ops views). */
    public ShardDivision division() {
        return division;
    }

    @Override
    public void sweepAll() {
        schedule.markAllDue();
        signal.wakeAll();
    }

    ShardStore store() {
        return store;
    }

    /** Workers follow a new scan width or pause at once, even those asleep, and look at every shard again. */
    private void stateChanged() {
        synchronized (polledLock) {
            schedule.ensureWidth(state.scanWidth());
            // fewer shards: those polled beyond the new width are no longer
            reportPolled();
        }
        sweepAll();
    }
}
