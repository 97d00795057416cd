package io.delayrelay.app.engine.cold;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.function.Supplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.support.PeriodicTask;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves the entries of every business with a {@code cold-after} between its hot shards and its cold tier, on one
 * thread of its own beside the workers (and a pool of {@link #THREADS} moving shards at once): for each shard this instance tends ({@code division.tends(shard)}: the shards it pops, every one while its seat is given up), first the
 * blocks due within the lead come back ({@code cold-promote.lua}), then the entries due after cold-after leave
 * ({@code cold-pick.lua}, {@code cold-demote.lua}). Every move is one atomic script on one shard, safe when two
 * instances move the same shard at once (docs/cold-tier.md); the division only saves the duplicate work.
 */
public final class ColdMover extends PeriodicTask {

    private static final Logger log = LoggerFactory.getLogger(ColdMover.class);

    /** Tick of the mover's thread; each business runs every {@link ColdTiming#periodMs()}. */
    static final Duration TICK = Duration.ofMillis(250);

    /**
     * Shards moved at once: Redis runs one script at a time, so more threads only help while this JVM compresses,
     * decodes and waits on the network; 4 kept Redis busy in the bench (docs/design/cold-tier-choice.md).
     */
    public static final int THREADS = 4;

    /** Entries listed per {@code cold-pick.lua} call. */
    static final int PICK = 2_000;

    static final int BLOCK_MAX = 1_000;

    /** Blocks listed per {@code cold-due.lua} call. */
    static final int DUE_BLOCKS = 16;

    /** How often the live cold entries are counted for the gauge. */
    static final long COUNT_EVERY_MS = 10_000;

    /** How often the shards of a business without cold-after are checked for cold blocks to bring back. */
    static final long DRAIN_EVERY_MS = 60_000;

    /** The lead of that drain: every block (a century). */
    static final long DRAIN_LEAD_MS = 100L * 365 * 86_400_000;

    /** Longest a pass of one business keeps demoting before the others (and promotion) get their turn. */
    static final long PASS_BUDGET_MS = 2_000;

    /** Longest a bucket of fewer than {@link #BLOCK_MAX} entries waits to fill up before it is demoted anyway. */
    static final long FILL_WAIT_MAX_MS = 60_000;

    /** A bucket this mover saw waiting to fill up longer ago than this is forgotten (it went away meanwhile). */
    static final long FILL_FORGET_MS = 10 * 60_000;

    private final Supplier<Map<String, BusinessRelay>> relays;
    private final ColdStore store;
    private final RelayEvents events;
    private final Map<String, long[]> nextRun = new ConcurrentHashMap<>();
    /** Buckets that wait to fill up, "K/shard/bucket": when this mover first saw one, and how many it listed then. */
    private final Map<String, long[]> filling = new ConcurrentHashMap<>();

    private ExecutorService pool;

    public ColdMover(Supplier<Map<String, BusinessRelay>> relays, ColdStore store, RelayEvents events) {
        super("relay-cold", "cold tier move", TICK);
        this.relays = relays;
        this.store = store;
        this.events = events;
    }

    @Override
    protected void beforeStart() {
        pool = Executors.newFixedThreadPool(THREADS, DaemonThreads.numbered("relay-cold-move-"));
    }

    @Override
    protected void afterStop() {
        pool.shutdownNow();
    }

    /**
     * One pass over every business whose period came. While a pass of a business used its whole budget (a bulk load
     * to demote), the next pass follows at once, not a tick later: between budgets, each business still gets its
     * turn and promotion runs first in every pass.
     */
    @Override
    protected void runOnce() {
        boolean more;
        do {
            more = false;
            long now = System.currentTimeMillis();
            for (BusinessRelay relay : relays.get().values()) {
                BusinessSpec spec = relay.spec();
                long[] next = nextRun.computeIfAbsent(spec.name(), n -> new long[2]);
                if (!spec.cold()) {
                    if (now >= next[1]) {
                        next[1] = now + DRAIN_EVERY_MS;
                        drain(relay, spec);
                    }
                    continue;
                }
                ColdTiming timing = ColdTiming.of(spec.coldAfter());
                if (now < next[0]) {
                    continue;
                }
                next[0] = now + timing.periodMs();
                boolean count = now >= next[1];
                if (count) {
                    next[1] = now + COUNT_EVERY_MS;
                    filling.values().removeIf(seen -> seen[0] < now - FILL_FORGET_MS);
                }
                more |= runBusiness(relay, spec, timing, count);
            }
        } while (more && !Thread.currentThread().isInterrupted());
    }

    /**
     * A business without {@code cold-after} (never had one, or switched off) gets every cold block back into its hot
     * shards: an operator turning the tier off expects nothing to stay cold.
     */
    void drain(BusinessRelay relay, BusinessSpec spec) {
        inParallel(pool, ownedShards(relay), shard -> {
            try {
                promote(relay, spec, shard, DRAIN_LEAD_MS);
            } catch (RuntimeException e) {
                log.warn(
                        "business={} shard={}: bringing the cold tier back failed: {}",
                        spec.name(),
                        shard,
                        e.toString());
                emit(e2 -> e2.error(spec, shard, e));
            }
        });
    }

    /**
     * One pass over the shards of one business this instance pops, {@link #THREADS} shards at a time: while Redis runs
     * one shard's script, the next shard's block is compressed or decoded here (a move is one script on one shard, so
     * moves of different shards at once are as safe as two instances moving, docs/cold-tier.md). Returns whether
     * the pass demoted entries until its budget ran out: more are likely left to demote.
     */
    boolean runBusiness(BusinessRelay relay, BusinessSpec spec, ColdTiming timing, boolean count) {
        AtomicLong demoted = new AtomicLong();
        AtomicLong entries = new AtomicLong();
        AtomicLong blocks = new AtomicLong();
        long deadline = System.nanoTime() + PASS_BUDGET_MS * 1_000_000;
        Moved moved = (shard, direction, n) -> report(spec, shard, direction, n);
        inParallel(pool, ownedShards(relay), shard -> {
            try {
                promote(relay, spec, shard, timing.leadMs());
                if (System.nanoTime() < deadline) {
                    demoted.addAndGet(demoteShard(
                            store,
                            spec.keys(),
                            shard,
                            timing,
                            deadline,
                            moved,
                            (bucket, listed) -> filled(spec.keys(), shard, bucket, listed, timing)));
                }
                if (count) {
                    ColdStore.Count c = store.count(spec.keys(), shard);
                    entries.addAndGet(c.entries());
                    blocks.addAndGet(c.blocks());
                }
            } catch (RuntimeException e) {
                if (Thread.currentThread().isInterrupted()) {
                    // the relay stops: the move in progress was one script, done or not done
                    return;
                }
                // the root says why (TRYAGAIN on a cluster slot in migration, ...): Spring's wrapper says only
                // "Error in execution"; the mover tries again next period
                log.warn(
                        "business={} shard={}: cold tier move failed, tried again next period: {}",
                        spec.name(),
                        shard,
                        Exceptions.rootMessage(e));
                emit(e2 -> e2.error(spec, shard, e));
            }
        });
        if (count && !Thread.currentThread().isInterrupted()) {
            long e = entries.get();
            long b = blocks.get();
            emit(ev -> ev.coldCounted(spec, e, b));
        }
        return demoted.get() > 0 && System.nanoTime() >= deadline;
    }

    private static List<Integer> ownedShards(BusinessRelay relay) {
        int width = relay.state().scanWidth();
        List<Integer> shards = new ArrayList<>(width);
        for (int i = 0; i < width; i++) {
            if (relay.division().tends(i)) {
                shards.add(i);
            }
        }
        return shards;
    }

    /**
     * Brings back every block of the shard due within the lead, then has this instance's workers look at the shard
     * (they learn its next due time from the pop): a wake-up that does not depend on keyspace notifications or
     * {@code K:wake}, so a promoted entry never waits for the safety sweep.
     */
    private void promote(BusinessRelay relay, BusinessSpec spec, int shard, long leadMs) {
        int back = promoteShard(store, spec.keys(), shard, leadMs, (s, direction, n) -> report(spec, s, direction, n));
        if (back > 0) {
            relay.announce(shard, 0);
        }
    }

    /** Entries of one shard moved in one direction: {@code demoted}, {@code promoted} or {@code skipped}. */
    @FunctionalInterface
    public interface Moved {
        void moved(int shard, String direction, int count);
    }

    /** Brings back every block of the shard due within {@code leadMs}; returns the entries back in the hot shard. */
    public static int promoteShard(ColdStore store, DelayQueueKeys keys, int shard, long leadMs, Moved moved) {
        int back = 0;
        List<ColdStore.DueBlock> due;
        do {
            due = store.due(keys, shard, leadMs, DUE_BLOCKS);
            for (ColdStore.DueBlock block : due) {
                ColdStore.Promoted p = store.promote(keys, shard, block);
                back += p.back();
                moved.moved(shard, "promoted", p.back());
                moved.moved(shard, "skipped", p.skipped());
            }
        } while (due.size() == DUE_BLOCKS);
        return back;
    }

    /**
     * Whether a shard's latest bucket, of fewer than {@link #BLOCK_MAX} entries, goes cold now: once no entry joined it
     * since the last period (the end of a bulk load goes cold one period later), or {@link ColdTiming#fillWaitMs()}
     * after this mover first saw it (a trickle fills one block per bucket, not one per period).
     */
    private boolean filled(DelayQueueKeys keys, int shard, long bucket, int listed, ColdTiming timing) {
        long now = System.currentTimeMillis();
        String key = keys.sourceKey() + "/" + shard + "/" + bucket;
        long[] seen = filling.get(key);
        if (seen == null) {
            filling.put(key, new long[] {now, listed});
            return false;
        }
        if (listed > seen[1] && now - seen[0] < timing.fillWaitMs()) {
            seen[1] = listed;
            return false;
        }
        filling.remove(key);
        return true;
    }

    /** Whether the entries listed of a shard's latest bucket, fewer than a block, go cold now or wait for more. */
    @FunctionalInterface
    public interface Filling {
        boolean filled(long bucket, int listed);
    }

    /**
     * Moves the shard's entries due after cold-after into blocks, a bucket of due times each, until none is left or
     * the deadline passed; returns the entries moved. Every bucket goes cold at once.
     */
    public static int demoteShard(
            ColdStore store, DelayQueueKeys keys, int shard, ColdTiming timing, long deadlineNanos, Moved moved) {
        return demoteShard(store, keys, shard, timing, deadlineNanos, moved, (bucket, listed) -> true);
    }

    /**
     * Like {@link #demoteShard(ColdStore, DelayQueueKeys, int, ColdTiming, long, Moved)}, but the shard's latest bucket,
     * when it has fewer than {@link #BLOCK_MAX} entries, stays hot until {@code filling} says it is complete: entries
     * that trickle in in due order (a constant delay, as an intake's x-delay) make one block per bucket, not one per
     * period (intake messages took 33 B an entry in blocks of 180, 24 in blocks of 1,000). Every earlier bucket goes
     * at once, so a bulk load is listed once.
     */
    public static int demoteShard(
            ColdStore store,
            DelayQueueKeys keys,
            int shard,
            ColdTiming timing,
            long deadlineNanos,
            Moved moved,
            Filling filling) {
        int total = 0;
        ColdStore.Pick pick;
        do {
            pick = store.pick(keys, shard, timing.coldAfterMs(), PICK);
            if (pick.entries().isEmpty()) {
                break;
            }
            int fan = store.fanOut(keys, shard);
            int pass = 0;
            List<List<ColdBlock.Entry>> blocks = blocks(pick.entries(), timing);
            // the listing reached the shard's last entry: its bucket is the one entries may still be joining
            boolean toTheEnd = pick.entries().size() < PICK;
            for (int b = 0; b < blocks.size(); b++) {
                List<ColdBlock.Entry> block = blocks.get(b);
                boolean last = toTheEnd && b == blocks.size() - 1;
                if (last
                        && block.size() < BLOCK_MAX
                        && !filling.filled(timing.bucketOf(block.get(0).dueMs()), block.size())) {
                    continue;
                }
                pass += store.demote(keys, shard, block, fan).moved();
            }
            total += pass;
            moved.moved(shard, "demoted", pass);
            if (pass == 0) {
                // what was listed changed under us, is held back, or waits to fill up: try again next period
                break;
            }
        } while (pick.entries().size() == PICK && System.nanoTime() < deadlineNanos);
        return total;
    }

    /**
     * Runs {@code move} for every shard on the pool and waits for all. Interrupted (the relay stops), it interrupts
     * the moves in progress (each is one script: done or not done) and returns with the interrupt flag set. A move
     * that throws is rethrown after all ended.
     */
    public static void inParallel(ExecutorService pool, List<Integer> shards, IntConsumer move) {
        List<Future<?>> running = new ArrayList<>(shards.size());
        for (int shard : shards) {
            running.add(pool.submit(() -> move.accept(shard)));
        }
        RuntimeException failed = null;
        for (Future<?> f : running) {
            try {
                f.get();
            } catch (InterruptedException e) {
                running.forEach(r -> r.cancel(true));
                Thread.currentThread().interrupt();
                return;
            } catch (ExecutionException e) {
                if (failed == null) {
                    failed = e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
                }
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    /** Listed entries (earliest first) cut into blocks: one bucket of due times, at most {@link #BLOCK_MAX} each. */
    public static List<List<ColdBlock.Entry>> blocks(List<ColdBlock.Entry> entries, ColdTiming timing) {
        Map<Long, List<ColdBlock.Entry>> byBucket = new LinkedHashMap<>();
        for (ColdBlock.Entry e : entries) {
            byBucket.computeIfAbsent(timing.bucketOf(e.dueMs()), b -> new ArrayList<>())
                    .add(e);
        }
        List<List<ColdBlock.Entry>> blocks = new ArrayList<>();
        for (List<ColdBlock.Entry> bucket : byBucket.values()) {
            for (int from = 0; from < bucket.size(); from += BLOCK_MAX) {
                blocks.add(bucket.subList(from, Math.min(bucket.size(), from + BLOCK_MAX)));
            }
        }
        return blocks;
    }

    private void report(BusinessSpec spec, int shard, String direction, int count) {
        if (count > 0) {
            emit(e -> e.coldMoved(spec, shard, direction, count));
        }
    }

    /** Metrics never stop a move. */
    private void emit(Consumer<RelayEvents> event) {
        try {
            event.accept(events);
        } catch (RuntimeException e) {
            log.debug("cold tier: reporting failed", e);
        }
    }
}
