package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntConsumer;
import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

import io.delayrelay.app.engine.wake.ShardWakeups;

/**
 * What this relay instance knows of each shard's earliest due time (Redis epoch ms), shared by a business's
 * workers: every pop reports the shard's next score (entries, retries and lease deadlines), producers' wake-ups and
 * keyspace peeks lower it, retries scheduled by this instance lower it. Workers pop only the shards known to be due
 * (each claimed by one worker) and sleep until the earliest known due time, so an entry is picked up when it falls
 * due no matter which worker last looked at its shard.
 * <p>
 * Knowledge can be stale (another instance popped, a producer wrote while notifications were lost or off): a sweep
 * ({@link #markAllDue}) marks every shard due, so that each is popped once and reports again. Sweeps run at start (a
 * new shard starts due), after every (re)subscription to notifications, after pause, reload or quarantine changes,
 * and every safety sweep (notifications on) or max-idle (polling). A shard too busy to be heard (the keyspace source
 * unsubscribed it) is polled: its pops' reports are capped at its poll interval ({@link #pollEvery}).
 */
final class ShardSchedule {

    /** Nothing known to be scheduled. */
    static final long NONE = ShardWakeups.NONE;

    /** A shard and its earliest known due time. */
    record Earliest(int shard, long dueMs) {}

    /** The known due time of a marked shard (and of a new one): due at once. */
    private static final long DUE_NOW = 0;

    private volatile AtomicLongArray next = new AtomicLongArray(0);
    /**
     * Per shard, 0 or the interval (ms) at which it is popped whatever its pops report: a shard whose keyspace
     * notifications are not heard because it is written so often ({@link #pollEvery}).
     */
    private volatile AtomicLongArray pollEveryMs = new AtomicLongArray(0);
    /** Per shard, how often {@link #lower} ran: a pop's report must not undo a lowering that came after the pop. */
    private volatile AtomicLongArray lowerings = new AtomicLongArray(0);
    /** The shard {@link #claimEarliestDue} claimed last: its next search starts after it. */
    private volatile int lastEarliest = -1;
    /**
     * Where {@link #claimAllDue} starts the order of shards known due at the same time: the first shard the last pop
     * of several left out ({@link #leftOutFrom}), so that the shards a used-up batch left out go first next time.
     */
    private volatile int tiesFrom;

    /** When {@link #sweepDue} last allowed a sweep (System.nanoTime). */
    private final AtomicLong lastSweepNanos = new AtomicLong(System.nanoTime());
    /** Runs between the two reads of a report (tests put an announcement there; a no-op otherwise). */
    private final IntConsumer raceProbe;
    /** Redis time (epoch ms), for the polled shards' next look. */
    private final LongSupplier nowMs;

    ShardSchedule() {
        this(shard -> {}, System::currentTimeMillis);
    }

    ShardSchedule(LongSupplier nowMs) {
        this(shard -> {}, nowMs);
    }

    /** {@code raceProbe}: called with the shard between the two reads of {@link #record(int, long, long)}. */
    ShardSchedule(IntConsumer raceProbe) {
        this(raceProbe, System::currentTimeMillis);
    }

    private ShardSchedule(IntConsumer raceProbe, LongSupplier nowMs) {
        this.raceProbe = raceProbe;
        this.nowMs = nowMs;
    }

    /** Makes room for {@code width} shards; new shards start as "unknown" (due now), so they are looked at. */
    synchronized void ensureWidth(int width) {
        AtomicLongArray current = next;
        if (current.length() == width) {
            return;
        }
        AtomicLongArray resized = new AtomicLongArray(width);
        AtomicLongArray counts = new AtomicLongArray(width);
        AtomicLongArray polls = new AtomicLongArray(width);
        for (int i = 0; i < Math.min(width, current.length()); i++) {
            resized.set(i, current.get(i));
            counts.set(i, lowerings.get(i));
            polls.set(i, pollEveryMs.get(i));
        }
        lowerings = counts;
        pollEveryMs = polls;
        next = resized;
    }

    /** Records a shard's next due time as read by a pop: {@code -1} means the shard is empty. */
    void record(int shard, long nextDueMs) {
        AtomicLongArray current = next;
        if (shard < current.length()) {
            current.set(shard, polledBy(shard, nextDueMs < 0 ? NONE : nextDueMs));
        }
    }

    /**
     * From now on {@code shard} is popped at least every {@code everyMs} whatever its pops report (0: no longer),
     * starting within {@code everyMs}: the keyspace source stops hearing a shard written this often, so an entry
     * written due earlier than what the last pop reported is found by the next of these pops instead.
     */
    void pollEvery(int shard, long everyMs) {
        AtomicLongArray polls = pollEveryMs;
        if (shard < 0 || shard >= polls.length()) {
            return;
        }
        polls.set(shard, Math.max(0, everyMs));
        if (everyMs > 0) {
            lower(shard, nowMs.getAsLong() + everyMs);
        }
    }

    /** The interval at which {@code shard} is popped whatever its pops report, 0 when it is not (tests, views). */
    long pollEveryMs(int shard) {
        AtomicLongArray polls = pollEveryMs;
        return shard >= 0 && shard < polls.length() ? polls.get(shard) : 0;
    }

    /** How many shards are popped whatever their pops report ({@link #pollEvery} above 0). */
    int polledCount() {
        AtomicLongArray polls = pollEveryMs;
        int polled = 0;
        for (int i = 0; i < polls.length(); i++) {
            if (polls.get(i) > 0) {
                polled++;
            }
        }
        return polled;
    }

    /** A pop's report of the shard's next due time, no later than its next poll when it is polled. */
    private long polledBy(int shard, long dueMs) {
        AtomicLongArray polls = pollEveryMs;
        long every = shard < polls.length() ? polls.get(shard) : 0;
        return every > 0 ? Math.min(dueMs, nowMs.getAsLong() + every) : dueMs;
    }

    /** The shard's known due time: {@link #NONE} when nothing is known, or while a worker has it claimed. */
    long knownDue(int shard) {
        AtomicLongArray current = next;
        return shard >= 0 && shard < current.length() ? current.get(shard) : NONE;
    }

    /** Read before a pop and passed to {@link #record(int, long, long)} with the pop's report. */
    long stamp(int shard) {
        AtomicLongArray counts = lowerings;
        return shard < counts.length() ? counts.get(shard) : 0;
    }

    /**
     * Records a shard's next due time as read by a pop that started at {@code stamp}: if an entry was announced
     * since (its write may postdate the pop), the earlier of the two is kept.
     */
    void record(int shard, long nextDueMs, long stamp) {
        AtomicLongArray current = next;
        if (shard >= current.length()) {
            return;
        }
        long value = polledBy(shard, nextDueMs < 0 ? NONE : nextDueMs);
        // lower() counts before it lowers. The value is read first, then the count: a lowering visible in the value
        // read is then visible in the count checked after it (so the report only lowers); one that comes after
        // both reads changes the value, and the compare-and-set fails. The shard was claimed (NONE) when the pop
        // started, so a lowering that leaves the value unchanged cannot happen in between.
        while (true) {
            long seen = current.get(shard);
            raceProbe.accept(shard);
            if (stamp(shard) != stamp) {
                break;
            }
            if (current.compareAndSet(shard, seen, value)) {
                return;
            }
        }
        current.accumulateAndGet(shard, value, Math::min);
    }

    /**
     * A producer announced (or a peek read) an entry due at {@code dueMs} in {@code shard}; returns whether that is
     * earlier than what was known of the shard.
     */
    boolean lower(int shard, long dueMs) {
        AtomicLongArray current = next;
        AtomicLongArray counts = lowerings;
        if (shard >= 0 && shard < current.length()) {
            if (shard < counts.length()) {
                counts.incrementAndGet(shard);
            }
            return current.getAndAccumulate(shard, dueMs, Math::min) > dueMs;
        }
        return false;
    }

    /**
     * Claims a shard a worker pops without asking the schedule (it drains it: its last pop came back full), so that
     * until that pop reports, the shard is not known due: a write notified meanwhile is peeked (the pop may have
     * read the shard before the write) and the other workers look elsewhere.
     */
    void claim(int shard) {
        AtomicLongArray current = next;
        if (shard >= 0 && shard < current.length()) {
            current.set(shard, NONE);
        }
    }

    /**
     * Claims a shard known to be due at {@code nowMs} (so that other workers look elsewhere until its next pop
     * reports again), or returns -1 when none is.
     */
    int claimDue(long nowMs, IntPredicate skip) {
        AtomicLongArray current = next;
        int width = current.length();
        if (width == 0) {
            return -1;
        }
        int start = ThreadLocalRandom.current().nextInt(width);
        for (int k = 0; k < width; k++) {
            int shard = (start + k) % width;
            long due = current.get(shard);
            if (due <= nowMs && !skip.test(shard) && current.compareAndSet(shard, due, NONE)) {
                return shard;
            }
        }
        return -1;
    }

    /**
     * Like {@link #claimDue}, but claims the due shard with the earliest known due time, so that a rate-capped
     * business, which pops a chunk at a time, takes the earliest due across its shards first. Ties (every shard a
     * sweep marked due, every shard whose last pop came back full at the same time) go round: the search starts after
     * the shard claimed last, so a sweep does not send the workers back to shard 0. Returns the shard and the due time
     * it was known by (to put it back with, see {@link #lower}), or {@code (-1, NONE)}.
     */
    Earliest claimEarliestDue(long nowMs, IntPredicate skip) {
        AtomicLongArray current = next;
        int width = current.length();
        while (width > 0) {
            int start = Math.floorMod(lastEarliest + 1, width);
            int best = -1;
            long bestDue = Long.MAX_VALUE;
            for (int k = 0; k < width; k++) {
                int shard = (start + k) % width;
                long due = current.get(shard);
                if (due <= nowMs && due < bestDue && !skip.test(shard)) {
                    best = shard;
                    bestDue = due;
                }
            }
            if (best < 0) {
                break;
            }
            if (current.compareAndSet(best, bestDue, NONE)) {
                lastEarliest = best;
                return new Earliest(best, bestDue);
            }
        }
        return new Earliest(-1, NONE);
    }

    /**
     * Claims every shard known to be due at {@code nowMs} that is not skipped, at most {@code max}, earliest known
     * due first (so that other workers look elsewhere until each one's pop reports again): what one pop of several
     * shards carries. Shards known due at the same time (a sweep's mark, shards whose last pop came back full or was
     * left out) go round, from the first shard the last pop of several left out ({@link #leftOutFrom}): the pop serves
     * them in this order until its batch is used up, so a fixed order would keep the last shards waiting as long as
     * the first ones stay full. Synchronized, so that two workers whose linger ends together do not split the due
     * shards between two pops: the first claims them all, the second finds none. Returns the shards with the due
     * times they were known by (to put a shard back with, see {@link #lower}).
     */
    synchronized List<Earliest> claimAllDue(long nowMs, IntPredicate skip, int max) {
        AtomicLongArray current = next;
        int width = current.length();
        List<Earliest> due = new ArrayList<>();
        for (int shard = 0; shard < width; shard++) {
            long at = current.get(shard);
            if (at <= nowMs && !skip.test(shard)) {
                due.add(new Earliest(shard, at));
            }
        }
        int from = tiesFrom;
        due.sort(Comparator.comparingLong(Earliest::dueMs)
                .thenComparingInt(e -> Math.floorMod(e.shard() - from, width)));
        List<Earliest> claimed = new ArrayList<>(Math.min(max, due.size()));
        for (Earliest e : due) {
            if (claimed.size() >= max) {
                break;
            }
            if (current.compareAndSet(e.shard(), e.dueMs(), NONE)) {
                claimed.add(e);
            }
        }
        return claimed;
    }

    /**
     * A pop of several shards used its batch up before {@code shard}'s turn: the next {@link #claimAllDue} orders the
     * shards known due at the same time from this one on.
     */
    void leftOutFrom(int shard) {
        tiesFrom = shard;
    }

    /**
     * Marks every shard due now, as if each were announced (a pop under way keeps this mark, see {@link #record(int,
     * long, long)}): each is claimed by one worker and popped once, and reports again.
     */
    void markAllDue() {
        AtomicLongArray current = next;
        AtomicLongArray counts = lowerings;
        for (int i = 0; i < current.length(); i++) {
            if (i < counts.length()) {
                counts.incrementAndGet(i);
            }
            current.accumulateAndGet(i, DUE_NOW, Math::min);
        }
    }

    /**
     * Whether a sweep is due: true for the first caller at least {@code intervalNanos} after the last sweep this
     * method allowed (so that the workers of one instance, each at its own idle deadline, sweep once per interval).
     */
    boolean sweepDue(long nowNanos, long intervalNanos) {
        long last = lastSweepNanos.get();
        return nowNanos - last >= intervalNanos && lastSweepNanos.compareAndSet(last, nowNanos);
    }

    /** The shard with the earliest known due time, or {@code (-1, NONE)}. */
    Earliest earliest() {
        return earliest(s -> false);
    }

    /** The shard with the earliest known due time among those not skipped, or {@code (-1, NONE)}. */
    Earliest earliest(IntPredicate skip) {
        AtomicLongArray current = next;
        int shard = -1;
        long due = NONE;
        for (int i = 0; i < current.length(); i++) {
            if (skip.test(i)) {
                continue;
            }
            long d = current.get(i);
            if (d < due) {
                due = d;
                shard = i;
            }
        }
        return new Earliest(shard, due);
    }
}
