package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

import io.delayrelay.api.DelayQueueKeys;

/**
 * This instance's share of one business's shards in the fleet's division (DESIGN.md: "INCR K:cursor"). Each instance
 * that can relay the business holds a seat ({@code seat.lua}); the live seats, in INCR order, divide the shards: rank r
 * of n pops the shards s with s mod n = r. So one instance pops a given shard, and the idle cost does not grow with
 * the fleet. A seat means "I relay": an instance that cannot ({@link RelayAbility}) gives it up ({@link #giveUp}).
 * Thread-safe: renewed on one thread, read by the workers and the wake-up sources.
 */
public final class ShardDivision {

    /**
     * {@code relay.division.*}.
     *
     * @param enabled     whether the fleet divides the shards (else every instance pops every shard)
     * @param seatTtl     how long a seat lives without renewal; renewed every third of it
     * @param giveUpAfter how long publishes may go unanswered (or every worker stay in one pop) before the instance
     *                    gives its seat up
     */
    public record Settings(boolean enabled, Duration seatTtl, Duration giveUpAfter) {

        public static final Duration DEFAULT_SEAT_TTL = Duration.ofSeconds(9);
        public static final Duration DEFAULT_GIVE_UP_AFTER = Duration.ofSeconds(5);
        public static final Settings DEFAULT = new Settings(true, DEFAULT_SEAT_TTL, DEFAULT_GIVE_UP_AFTER);

        public Settings(boolean enabled, Duration seatTtl) {
            this(enabled, seatTtl, DEFAULT_GIVE_UP_AFTER);
        }

        /** How often each instance renews its seat. */
        public Duration renewEvery() {
            return seatTtl.dividedBy(3);
        }

        /**
         * How long a share is still popped after the instance's renewal replaced it: the seat TTL plus one renewal
         * period. Every other live instance renews within a renewal period of the change, and one that does not
         * pops every shard once its own last renewal is a TTL old.
         */
        public Duration overlap() {
            return seatTtl.plus(renewEvery());
        }
    }

    /**
     * This instance's place in the division as last renewed: {@code rank} among {@code of} live seats, {@code seat}
     * the number drawn from {@code K:cursor}. {@link #NONE} (rank -1) owns nothing: the seat was given up.
     */
    public record Share(long seat, int rank, int of) {

        static final Share ALL = new Share(0, 0, 1);
        static final Share NONE = new Share(0, -1, 0);

        public boolean owns(int shard) {
            if (rank < 0) {
                return false;
            }
            return of <= 1 || shard % of == rank;
        }

        /** How many of the shards {@code 0..width-1} this share pops. */
        public int count(int width) {
            return (int) IntStream.range(0, width).filter(this::owns).count();
        }
    }

    /** A share replaced at {@code untilNanos - overlap}, still popped until {@code untilNanos}. */
    private record Former(Share share, long untilNanos) {}

    /** Added to a renewal period where an instance relies on the others having renewed: their calls, their pops. */
    static final Duration JOIN_MARGIN = Duration.ofMillis(500);

    private final String holder;
    private final Settings settings;
    private final LongSupplier nanos;
    private volatile Share share = Share.ALL;
    /** When the seat was last renewed (System.nanoTime); 0 before the first renewal. */
    private volatile long renewedNanos;
    /** Shares replaced within the overlap, still popped (copy on write: read by every worker's pick). */
    private volatile List<Former> formers = List.of();
    /** Why the seat was given up, or null while this instance holds one (or may draw one). */
    private volatile String givenUp;
    /** {@code K:cursor} at the last renewal ({@link SeatStore.Seat#fleet()}): it moves at every change of the seats. */
    private volatile long fleet = -1;

    /** No division: the instance pops every shard (a relay built without the fleet's settings). */
    static ShardDivision none() {
        return new ShardDivision("-", new Settings(false, Duration.ZERO), System::nanoTime);
    }

    ShardDivision(String holder, Settings settings, LongSupplier nanos) {
        this.holder = holder;
        this.settings = settings;
        this.nanos = nanos;
    }

    /** Whether this instance pops {@code shard}: its share in force, or a former one within the overlap. */
    public boolean owns(int shard) {
        if (effective().owns(shard)) {
            return true;
        }
        if (givenUp != null || formers.isEmpty()) {
            return false;
        }
        long now = nanos.getAsLong();
        for (Former former : formers) {
            if (former.untilNanos() - now > 0 && former.share().owns(shard)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether this instance does {@code shard}'s housekeeping (the cold tier's moves): the shards it pops, or every
     * shard while its seat is given up. Housekeeping needs Redis only, so a paused or broker-less instance still does
     * it, and a business paused by configuration on every instance keeps its cold tier; a shard moved by two
     * instances costs work, never an entry.
     */
    public boolean tends(int shard) {
        return givenUp != null || owns(shard);
    }

    /** Whether this instance leaves some shards to other instances. */
    boolean divides() {
        Share effective = effective();
        return effective.of() > 1 || effective.rank() < 0;
    }

    /**
     * The share in force: none while the seat is given up; every shard when the division is off, not renewed yet,
     * or not renewed for a whole TTL.
     */
    public Share effective() {
        if (!settings.enabled()) {
            return Share.ALL;
        }
        if (givenUp != null) {
            return Share.NONE;
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

    /** Why this instance gave its seat up, or null while it holds one. */
    public String givenUp() {
        return givenUp;
    }

    /** This instance's name in {@code {K:cursor}:seats}. */
    public String holder() {
        return holder;
    }

    Settings settings() {
        return settings;
    }

    /**
     * Renews the seat (drawing one when it has none, it expired, or it was given up) and returns the shards of
     * {@code width} this instance pops now and did not before (empty when nothing changed). A failure is thrown to
     * the caller.
     * <p>
     * The instances learn of a change each at its own renewal, up to a third of the TTL apart. So that no shard is
     * nobody's meanwhile, a replaced share is still popped for the {@link Settings#overlap() overlap}. A joining
     * instance pops every shard until its next renewal plus {@link #JOIN_MARGIN}: the others may not have renewed
     * into the seats its view names. Pops are atomic: two owners of a shard cost work, never a duplicate. A dead
     * instance's seat is dropped at the next renewal after its TTL; its shards are popped again within TTL + TTL/3.
     * An instance that could not renew for a whole TTL pops every shard: a shard popped twice beats one nobody pops.
     * <p>
     * A renewal that finds the seats changed more than once since the previous one ({@code K:cursor} moved by more
     * than one) also pops every shard until its next renewal plus the margin. Its former share is not enough then:
     * another instance that renewed in between may hold a view that gives this instance a share it never had (a join
     * and a leave between two of its renewals, then an expiry). Each of the others finds the change at its own next
     * renewal, within that window (DivisionModelTest).
     */
    List<Integer> renew(SeatStore seats, DelayQueueKeys keys, int width) {
        boolean[] owned = ownership(width);
        SeatStore.Seat seat = seats.takeSeat(keys, holder, settings.seatTtl().toMillis());
        Share next = new Share(seat.seat(), seat.rank(), seat.of());
        long now = nanos.getAsLong();
        long renewed = renewedNanos;
        boolean held = settings.enabled()
                && givenUp == null
                && renewed != 0
                && now - renewed <= settings.seatTtl().toNanos();
        if (held && !share.equals(next)) {
            // the share replaced is popped on until every other instance must have adopted the change
            keepFormer(share, now, settings.overlap());
        }
        if (!held || !oneChangeAtMost(fleet, seat.fleet())) {
            // joining (first seat, again after giving it up or after a whole TTL without a renewal), or the seats
            // changed more than once since the last renewal: the others' views may name this instance by seats of
            // any moment in between; it pops every shard until its own next renewal, by when each of them renewed
            // into the latest seats
            keepFormer(Share.ALL, now, settings.renewEvery().plus(JOIN_MARGIN));
        }
        givenUp = null;
        share = next;
        fleet = seat.fleet();
        renewedNanos = now;
        return gained(owned, width);
    }

    /**
     * The shards this instance pops now and did not when {@code ownedBefore} was read ({@link #ownership}): after a
     * renewal that threw (a whole TTL without one: every shard), or a leave that opened a window.
     */
    List<Integer> gainedSince(boolean[] ownedBefore, int width) {
        return gained(ownedBefore, width);
    }

    /** This instance's place among {@code width} shards: "seat 5, rank 1 of 3, shards 1 4", "given up: …", or "every shard". */
    String summary(int width) {
        if (givenUp != null) {
            return "given up: " + givenUp;
        }
        Share now = effective();
        if (now.of() <= 1) {
            return "every shard";
        }
        StringBuilder text = new StringBuilder()
                .append("seat ")
                .append(now.seat())
                .append(", rank ")
                .append(now.rank())
                .append(" of ")
                .append(now.of())
                .append(", shards");
        owned(width).stream().forEach(shard -> text.append(' ').append(shard));
        return text.toString();
    }

    /** The shards of {@code 0..width-1} this instance pops now (formers included). */
    BitSet owned(int width) {
        BitSet owned = new BitSet(width);
        for (int shard = 0; shard < width; shard++) {
            if (owns(shard)) {
                owned.set(shard);
            }
        }
        return owned;
    }

    /** Which of the shards {@code 0..width-1} this instance pops now (formers included). */
    boolean[] ownership(int width) {
        boolean[] owned = new boolean[width];
        for (int shard = 0; shard < width; shard++) {
            owned[shard] = owns(shard);
        }
        return owned;
    }

    /**
     * Gives the seat up because this instance cannot relay the business ({@code reason}): it pops nothing from now
     * on (formers included), and the others take its shards at their next renewal. Throws when Redis cannot be told;
     * the seat is given up here all the same (it expires within the TTL).
     */
    void giveUp(SeatStore seats, DelayQueueKeys keys, String reason) {
        givenUp = reason;
        formers = List.of();
        if (settings.enabled()) {
            seats.leaveSeat(keys, holder);
        }
    }

    /**
     * Gives the seat up (graceful stop); the share stays in force until the workers stop (see the class comment). When
     * the seats changed since the last renewal, the others may hold a view that gives this instance a share it never
     * had: it pops every shard for the hand-over (a renewal period plus the margin).
     */
    void leave(SeatStore seats, DelayQueueKeys keys) {
        if (settings.enabled() && renewedNanos != 0 && givenUp == null) {
            long before = seats.leaveSeat(keys, holder);
            if (before != fleet) {
                // the seats changed after the last renewal: the others' views may give it a share it never had
                keepFormer(Share.ALL, nanos.getAsLong(), settings.renewEvery().plus(JOIN_MARGIN));
            }
        }
    }

    /**
     * Whether the seats changed at most once between two renewals that read {@code K:cursor} as {@code before} and
     * {@code after}. Each change (a seat drawn, given up, or dropped) moves it by one, and every renewal drops the
     * expired seats first, so every view any instance took between the two was one of this instance's two views: the
     * share replaced (popped on as a former) or the new one. A cursor that went back counts as many changes.
     */
    static boolean oneChangeAtMost(long before, long after) {
        return after == before || after == before + 1;
    }

    private void keepFormer(Share replaced, long now, Duration overlap) {
        List<Former> kept = new ArrayList<>(formers.size() + 1);
        for (Former former : formers) {
            if (former.untilNanos() - now > 0) {
                kept.add(former);
            }
        }
        kept.add(new Former(replaced, now + overlap.toNanos()));
        formers = List.copyOf(kept);
    }

    private List<Integer> gained(boolean[] ownedBefore, int width) {
        List<Integer> gained = new ArrayList<>();
        for (int shard = 0; shard < width; shard++) {
            boolean before = shard < ownedBefore.length && ownedBefore[shard];
            if (!before && owns(shard)) {
                gained.add(shard);
            }
        }
        return gained;
    }
}
