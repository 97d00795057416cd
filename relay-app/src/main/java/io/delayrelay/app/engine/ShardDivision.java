package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

import io.delayrelay.api.DelayQueueKeys;

/**
 * This instance's share of one business's shards in the fleet's division (DESIGN.md: "INCR K:cursor"). Each instance
 * running the business holds a seat drawn with {@code INCR K:cursor} and renews it every third of the seat TTL
 * ({@code seat.lua}); the live seats, in INCR order, divide the shards: the instance of rank r among n pops the
 * shards s with s mod n = r, and leaves the others alone (no pop, no peek on their notifications, no sweep). So in the
 * steady state one instance of the fleet pops a given shard, and the fleet's idle cost does not grow with its size.
 * <p>
 * Hand-over: a seat not renewed within the TTL (its instance died, was frozen, or lost Redis) is dropped by the next
 * renewal of another instance, and every instance takes its new share at its own next renewal: a shard whose
 * instance stopped renewing at t is popped by another one by t + TTL + TTL/3 (12 s at the default 9 s TTL; the
 * killed instance's leases take the lease, 30 s, anyway), and at the others' next renewal after a graceful stop (the seat is given up). Newly taken shards are swept (popped once) at once.
 * <p>
 * An instance that could not renew its seat for a whole TTL pops every shard: it may have been dropped, and a shard
 * no one pops would be worse than a shard popped twice (pops are atomic: two poppers cost work, never a duplicate).
 * With one live seat, or with the division disabled, the instance pops every shard. Thread-safe: renewed on one
 * thread, read by the workers and the wake-up sources.
 */
public final class ShardDivision {

    /**
     * {@code relay.division.*}.
     *
     * @param enabled whether the fleet divides the shards (else every instance pops every shard)
     * @param seatTtl how long a seat lives without renewal; renewed every third of it
     */
    public record Settings(boolean enabled, Duration seatTtl) {

        public static final Duration DEFAULT_SEAT_TTL = Duration.ofSeconds(9);
        public static final Settings DEFAULT = new Settings(true, DEFAULT_SEAT_TTL);

        /** How often each instance renews its seat. */
        public Duration renewEvery() {
            return seatTtl.dividedBy(3);
        }
    }

    /**
     * This instance's place in the division as last renewed: {@code rank} among {@code of} live seats, {@code seat}
     * the number drawn from {@code K:cursor}.
     */
    public record Share(long seat, int rank, int of) {

        static final Share ALL = new Share(0, 0, 1);

        public boolean owns(int shard) {
            return of <= 1 || shard % of == rank;
        }

        /** How many of the shards {@code 0..width-1} this share pops. */
        public int count(int width) {
            return (int) IntStream.range(0, width).filter(this::owns).count();
        }
    }

    private final String holder;
    private final Settings settings;
    private final LongSupplier nanos;
    private volatile Share share = Share.ALL;
    /** When the seat was last renewed (System.nanoTime); 0 before the first renewal. */
    private volatile long renewedNanos;

    ShardDivision(String holder, Settings settings, LongSupplier nanos) {
        this.holder = holder;
        this.settings = settings;
        this.nanos = nanos;
    }

    /** Whether this instance pops {@code shard}. */
    public boolean owns(int shard) {
        return effective().owns(shard);
    }

    /** Whether this instance leaves some shards to other instances. */
    boolean divides() {
        return effective().of() > 1;
    }

    /** The share in force: every shard when the division is off, not renewed yet, or not renewed for a whole TTL. */
    public Share effective() {
        if (!settings.enabled()) {
            return Share.ALL;
        }
        long renewed = renewedNanos;
        if (renewed == 0 || nanos.getAsLong() - renewed > settings.seatTtl().toNanos()) {
            return Share.ALL;
        }
        return share;
    }

    /** The last renewed share (whether in force or not). */
    Share share() {
        return share;
    }

    /** This instance's name in {@code {K:cursor}:seats}. */
    public String holder() {
        return holder;
    }

    Settings settings() {
        return settings;
    }

    /**
     * Renews the seat (drawing one when it has none or it expired) and returns the shards of {@code width} this
     * instance pops now and did not before (empty when nothing changed). A failure is thrown to the caller; after a
     * whole TTL without a renewal the instance pops every shard (see the class comment).
     */
    List<Integer> renew(ShardStore store, DelayQueueKeys keys, int width) {
        Share before = effective();
        ShardStore.Seat seat = store.takeSeat(keys, holder, settings.seatTtl().toMillis());
        share = new Share(seat.seat(), seat.rank(), seat.of());
        renewedNanos = nanos.getAsLong();
        return gained(before, effective(), width);
    }

    /**
     * The shards newly this instance's when the renewal failed: after a whole TTL without one, every shard (called
     * by the renewing thread when {@link #renew} threw).
     */
    List<Integer> renewalFailed(Share before, int width) {
        return gained(before, effective(), width);
    }

    /** Gives the seat up (graceful stop): the other instances take its shards at their next renewal. */
    void leave(ShardStore store, DelayQueueKeys keys) {
        if (settings.enabled() && renewedNanos != 0) {
            store.leaveSeat(keys, holder);
        }
    }

    private static List<Integer> gained(Share before, Share after, int width) {
        List<Integer> gained = new ArrayList<>();
        if (before.equals(after)) {
            return gained;
        }
        for (int shard = 0; shard < width; shard++) {
            if (after.owns(shard) && !before.owns(shard)) {
                gained.add(shard);
            }
        }
        return gained;
    }
}
