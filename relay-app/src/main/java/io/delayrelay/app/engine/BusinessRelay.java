package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Set;

import io.delayrelay.api.internal.ShardTopology;
import io.delayrelay.app.engine.wake.ShardWakeups;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One business in the engine: its state, its worker pool, its batch settler, and what its workers share (the wake
 * signal, the known due times). Starts, stops and re-configures them together, and is the wake-up sources' port
 * ({@link ShardWakeups}). Its seat in the fleet is its {@link SeatKeeper}'s.
 */
public final class BusinessRelay implements ShardWakeups {

    private static final Logger log = LoggerFactory.getLogger(BusinessRelay.class);

    private final ShardStore store;
    private final TopologyStore topology;
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
     * Guards a shard's poll interval and the polled count reported after it. Not this relay's monitor: the wake-up
     * source calls {@link #pollEvery} under its own lock, and must not wait for Redis.
     */
    private final Object polledLock = new Object();
    /** The polled-shard count last reported (the gauge starts at 0). */
    private int reportedPolled;

    BusinessRelay(
            BusinessSpec spec,
            ShardStore store,
            BatchPublisher publisher,
            EventReporter events,
            RedisClock clock,
            ShardDivision division) {
        this(spec, store, publisher, events, clock, division, new RateGovernor(store.redis(), events));
    }

    /** With the given rate governor (tests count its charges). */
    BusinessRelay(
            BusinessSpec spec,
            ShardStore store,
            BatchPublisher publisher,
            EventReporter events,
            RedisClock clock,
            ShardDivision division,
            RateGovernor governor) {
        this.store = store;
        this.topology = new TopologyStore(store.redis());
        this.events = events;
        this.clock = clock;
        this.division = division;
        this.schedule = new ShardSchedule(clock::nowMs);
        this.state = new BusinessState(spec, new ShardQuarantine(System::nanoTime), this::stateChanged);
        this.schedule.ensureWidth(state.scanWidth());
        this.governor = governor;
        this.settler =
                new BatchSettler(spec.threadNamePrefix(), store, publisher, events, clock, this::retryAt, ability);
        this.seats = new SeatKeeper(
                division, ability, new SeatStore(store.redis()), publisher, state, events, this::sweepGained);
        this.workers = new WorkerPool(
                state,
                (index, keepRunning) -> new PopWorker(
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

    /** Records the shard count in {@code K:meta} (unless a higher topology version owns it) and scans what it records. */
    void adoptTopology(long topologyVersion) {
        adopt(topologyVersion, 0);
    }

    /**
     * Like {@link #adoptTopology(long)}, at start. When {@code K:meta} lost its count, producers hashed into
     * {@code producersFallback}: if they wrote beyond this count, the fallback drains like an earlier count.
     */
    void adoptTopology(long topologyVersion, int producersFallback) {
        BusinessSpec spec = state.spec();
        adopt(topologyVersion, topology.producersWroteBeyond(spec, producersFallback) ? producersFallback : 0);
    }

    /**
     * {@code K:meta} lost its shard count while the relay runs: producers hash into {@code producersFallback} from
     * now until they read it again, so that count is drained (when larger) whatever its shards hold now.
     */
    void recordLostTopology(long topologyVersion, int producersFallback) {
        adopt(topologyVersion, producersFallback);
    }

    private void adopt(long topologyVersion, int producersFallback) {
        state.followTopology(topology.reshard(state.spec(), topologyVersion, producersFallback));
    }

    /**
     * Applies new settings at runtime (hot reload). A changed shard count is recorded in {@code K:meta}; retired
     * shards keep being scanned until the topology keeper finds them empty.
     */
    synchronized void update(BusinessSpec next, long topologyVersion) {
        BusinessSpec previous = state.spec();
        ShardTopology meta = next.shards() != previous.shards() ? topology.reshard(next, topologyVersion) : null;
        state.apply(next, meta);
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
     * An entry of {@code shard} is due at {@code dueMs} (a producer's wake-up, a peek, or a retry put back here). The
     * workers are woken only when that is earlier than what they knew.
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

    /** A retry put back at {@code dueMs}: announced here, or to the shard's current owner ({@link SeatKeeper}). */
    private void retryAt(int shard, long dueMs) {
        if (division.owns(shard)) {
            announce(shard, dueMs);
        } else {
            seats.retryElsewhere(shard, dueMs);
        }
    }

    /**
     * True for a shard another instance pops (a peek here would be wasted), or whose known due time is within
     * {@code ms}: that pop reads whatever the write added. A claimed shard is peeked: its pop may have read it first.
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
        return division.owned(state.scanWidth());
    }

    /** This instance's seat in the fleet's division of the business's shards. */
    SeatKeeper seats() {
        return seats;
    }

    /**
     * This instance's place in the division, for the fleet's heartbeat: "seat 5, rank 1 of 3, shards 1 4 7 10",
     * "given up: reason", or "every shard" (division off, alone, or not renewed for a whole TTL).
     */
    public String seatSummary() {
        return division.summary(state.scanWidth());
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

    /** The business's shard topology in {@code K:meta}. */
    TopologyStore topology() {
        return topology;
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
