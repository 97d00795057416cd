package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.support.RelayTestKit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The fleet's division of a business's shards (seat.lua through {@link ShardDivision}) against the real Redis: seats
 * drawn in INCR order, one owner per shard, a seat not renewed within its TTL dropped and its shards taken over,
 * a graceful leave, a cursor that went back, foreign data in the seats key, and the fall-back to every shard.
 */
@Tag("timing")
class ShardDivisionTest {

    private static final int SHARDS = 16;

    private final RelayTestKit kit = new RelayTestKit();
    private final DelayQueueKeys keys = DelayQueueKeys.forBusiness(kit.business("division"));
    private final SeatStore store = new SeatStore(kit.redisFactory());
    private final AtomicLong nanos = new AtomicLong(1);

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    private ShardDivision division(String holder, Duration ttl) {
        return new ShardDivision(holder, new ShardDivision.Settings(true, ttl), nanos::get);
    }

    /** a and b seated in that order, a renewed once more: both know of each other. */
    private List<ShardDivision> twoSeated(Duration ttl) {
        ShardDivision a = division("a", ttl);
        ShardDivision b = division("b", ttl);
        for (ShardDivision d : List.of(a, b, a)) {
            d.renew(store, keys, SHARDS);
        }
        return List.of(a, b);
    }

    /** a, b and c seated in that order, a and b renewed once more: all three know of each other. */
    private List<ShardDivision> threeSeated(Duration ttl) {
        ShardDivision a = division("a", ttl);
        ShardDivision b = division("b", ttl);
        ShardDivision c = division("c", ttl);
        for (ShardDivision d : List.of(a, b, c, a, b)) {
            d.renew(store, keys, SHARDS);
        }
        return List.of(a, b, c);
    }

    /** a, b and c seated and past the overlap; then d draws a seat (the others have not renewed since). */
    private List<ShardDivision> threeSettledThenAFourthJoins(Duration ttl) {
        List<ShardDivision> three = threeSeated(ttl);
        pastTheOverlap(ttl, three.toArray(ShardDivision[]::new));
        ShardDivision d = division("d", ttl);
        d.renew(store, keys, SHARDS);
        return List.of(three.get(0), three.get(1), three.get(2), d);
    }

    /** The shards of the share in force (formers within the overlap left out). */
    private static TreeSet<Integer> owned(ShardDivision d) {
        TreeSet<Integer> owned = new TreeSet<>();
        IntStream.range(0, SHARDS).filter(d.effective()::owns).forEach(owned::add);
        return owned;
    }

    /** The shards the instance pops: its share in force and the formers within the overlap. */
    private static TreeSet<Integer> popped(ShardDivision d) {
        TreeSet<Integer> popped = new TreeSet<>();
        IntStream.range(0, SHARDS).filter(d::owns).forEach(popped::add);
        return popped;
    }

    /**
     * Lets every former share's overlap end (seat TTL + a renewal period) while the divisions given renew every
     * renewal period, as the engine's seat thread does (their shares stay as they were).
     */
    private void pastTheOverlap(Duration ttl, ShardDivision... divisions) {
        for (int period = 0; period < 5; period++) {
            nanos.addAndGet(ttl.toNanos() / 3);
            for (ShardDivision d : divisions) {
                d.renew(store, keys, SHARDS);
            }
        }
    }

    @Test
    void threeInstancesDrawSeatsInIncrOrderAndEveryShardHasExactlyOneOwner() {
        ShardDivision a = division("a", Duration.ofSeconds(3));
        ShardDivision b = division("b", Duration.ofSeconds(3));
        ShardDivision c = division("c", Duration.ofSeconds(3));
        assertThat(owned(a))
                .as("before its first renewal an instance pops every shard")
                .hasSize(SHARDS);
        a.renew(store, keys, SHARDS);
        b.renew(store, keys, SHARDS);
        c.renew(store, keys, SHARDS);
        // a and b renew again: they learn of c
        a.renew(store, keys, SHARDS);
        b.renew(store, keys, SHARDS);

        assertThat(List.of(a.share(), b.share(), c.share()))
                .containsExactly(
                        new ShardDivision.Share(1, 0, 3),
                        new ShardDivision.Share(2, 1, 3),
                        new ShardDivision.Share(3, 2, 3));
        assertThat(owned(a)).containsExactly(0, 3, 6, 9, 12, 15);
        assertThat(owned(b)).containsExactly(1, 4, 7, 10, 13);
        assertThat(owned(c)).containsExactly(2, 5, 8, 11, 14);
        assertThat(get(keys.cursor())).isEqualTo("3");
        assertThat(seats()).containsOnlyKeys("a", "b", "c");
    }

    @Test
    void aSeatNotRenewedWithinItsTtlIsDroppedAndTheOthersTakeItsShardsAtTheirNextRenewal() throws Exception {
        Duration ttl = Duration.ofMillis(400);
        List<ShardDivision> three = threeSeated(ttl);
        ShardDivision a = three.get(0);
        ShardDivision b = three.get(1);
        ShardDivision c = three.get(2);
        pastTheOverlap(ttl, a, b);
        TreeSet<Integer> aBefore = owned(a);
        assertThat(popped(a)).as("the overlap over: a pops its share alone").isEqualTo(aBefore);

        // c stops renewing (killed or frozen); a and b keep renewing every third of the TTL
        long stoppedAt = System.nanoTime();
        List<Integer> gained = List.of();
        while (a.share().of() == 3) {
            Thread.sleep(ttl.toMillis() / 3);
            nanos.addAndGet(ttl.toNanos() / 3);
            gained = a.renew(store, keys, SHARDS);
            b.renew(store, keys, SHARDS);
        }
        long handOverMs = (System.nanoTime() - stoppedAt) / 1_000_000;
        b.renew(store, keys, SHARDS);

        assertThat(handOverMs)
                .as("c's seat dropped between its TTL and its TTL + one renewal period (plus scheduling margin)")
                .isBetween(ttl.toMillis() - 50, ttl.toMillis() * 4 / 3 + 300);
        assertThat(a.share()).isEqualTo(new ShardDivision.Share(1, 0, 2));
        assertThat(b.share()).isEqualTo(new ShardDivision.Share(2, 1, 2));
        TreeSet<Integer> union = new TreeSet<>(owned(a));
        union.addAll(owned(b));
        assertThat(union).hasSize(SHARDS);
        assertThat(owned(a)).doesNotContainAnyElementsOf(owned(b));
        TreeSet<Integer> expectedGain = new TreeSet<>(owned(a));
        expectedGain.removeAll(aBefore);
        assertThat(gained)
                .as("what a renewal reports as taken over (to be swept)")
                .containsExactlyElementsOf(expectedGain);
        assertThat(seats()).containsOnlyKeys("a", "b");

        // c wakes up (SIGCONT): its seat expired, so it draws a new one and joins at the end of the order (seat 5:
        // dropping seat 3 moved K:cursor to 4)
        assertThat(get(keys.cursor())).isEqualTo("4");
        c.renew(store, keys, SHARDS);
        assertThat(c.share()).isEqualTo(new ShardDivision.Share(5, 2, 3));
    }

    @Test
    void aSeatGivenUpAtStopIsGoneAtTheOthersNextRenewal() {
        List<ShardDivision> two = twoSeated(Duration.ofSeconds(30));
        ShardDivision a = two.get(0);
        ShardDivision b = two.get(1);
        assertThat(owned(a)).hasSize(8);
        pastTheOverlap(Duration.ofSeconds(30), a);
        assertThat(popped(a)).hasSize(8);

        b.leave(store, keys);
        List<Integer> gained = a.renew(store, keys, SHARDS);

        assertThat(a.share()).isEqualTo(new ShardDivision.Share(1, 0, 1));
        assertThat(owned(a)).hasSize(SHARDS);
        assertThat(gained).containsExactly(1, 3, 5, 7, 9, 11, 13, 15);
    }

    @Test
    void aCursorThatWentBackStillGivesEveryInstanceARankOfItsOwn() {
        ShardDivision a = division("a", Duration.ofSeconds(30));
        ShardDivision b = division("b", Duration.ofSeconds(30));
        ShardDivision c = division("c", Duration.ofSeconds(30));
        a.renew(store, keys, SHARDS);
        b.renew(store, keys, SHARDS);
        del(keys.cursor());
        c.renew(store, keys, SHARDS);
        a.renew(store, keys, SHARDS);
        b.renew(store, keys, SHARDS);

        assertThat(c.share().seat()).as("the cursor restarted").isEqualTo(1);
        assertThat(List.of(a.share().rank(), c.share().rank(), b.share().rank()))
                .as("ranked by (seat, holder): a(1) c(1) b(2)")
                .containsExactly(0, 1, 2);
        TreeSet<Integer> union = new TreeSet<>(owned(a));
        union.addAll(owned(b));
        union.addAll(owned(c));
        assertThat(union).hasSize(SHARDS);
    }

    @Test
    void anUnreadableSeatWrittenByAnotherProgramIsDroppedAndNotCounted() {
        try (RedisConnection c = kit.redis()) {
            c.hashCommands().hSet(bytes(keys.seats()), bytes("stranger"), bytes("not a seat"));
        }
        SeatStore.Seat seat = store.takeSeat(keys, "a", 3_000);
        assertThat(seat.of()).isEqualTo(1);
        assertThat(seat.dropped()).isEqualTo(1);
        assertThat(seats()).containsOnlyKeys("a");
    }

    @Test
    void aRenewalThatFailsForAWholeTtlMakesTheInstancePopEveryShard() {
        Duration ttl = Duration.ofSeconds(3);
        List<ShardDivision> two = twoSeated(ttl);
        ShardDivision a = two.get(0);
        ShardDivision b = two.get(1);
        pastTheOverlap(ttl, a);
        boolean[] before = a.ownership(SHARDS);
        assertThat(popped(a)).hasSize(8);

        // another program overwrote the seats key with a string
        del(keys.seats());
        try (RedisConnection c = kit.redis()) {
            c.stringCommands().set(bytes(keys.seats()), bytes("oops"));
        }
        assertThatThrownBy(() -> a.renew(store, keys, SHARDS))
                .satisfies(e -> assertThat(Exceptions.rootMessage(e)).contains("WRONGTYPE"));
        nanos.addAndGet(ttl.toNanos() / 2);
        assertThat(a.gainedSince(before, SHARDS))
                .as("within the TTL the share holds")
                .isEmpty();
        assertThat(owned(a)).hasSize(8);

        nanos.addAndGet(ttl.toNanos());
        List<Integer> gained = a.gainedSince(before, SHARDS);
        assertThat(owned(a)).as("a whole TTL without a renewal: every shard").hasSize(SHARDS);
        assertThat(gained).containsExactly(1, 3, 5, 7, 9, 11, 13, 15);
    }

    @Test
    void withTheDivisionOffAnInstancePopsEveryShardAndWritesNoSeat() {
        ShardDivision off =
                new ShardDivision("a", new ShardDivision.Settings(false, Duration.ofSeconds(3)), nanos::get);
        assertThat(owned(off)).hasSize(SHARDS);
        assertThat(off.divides()).isFalse();
        off.leave(store, keys);
        assertThat(kit.keysOf(keys.sourceKey().substring("delayqueue:".length())))
                .isEmpty();
    }

    @Test
    void atAJoinEveryShardKeepsAPopperWhileTheOthersAdoptTheChangeOneByOne() {
        // finding 2 of the 2026-11-28 engine review: A renews first after D joined; B and C still divide by 3
        Duration ttl = Duration.ofSeconds(9);
        List<ShardDivision> four = threeSettledThenAFourthJoins(ttl);
        ShardDivision a = four.get(0);
        ShardDivision b = four.get(1);
        ShardDivision c = four.get(2);
        ShardDivision d = four.get(3);
        assertThat(d.share()).isEqualTo(new ShardDivision.Share(4, 3, 4));

        a.renew(store, keys, SHARDS);
        assertThat(owned(a)).as("a's new share").containsExactly(0, 4, 8, 12);
        assertThat(popped(a))
                .as("shards 6 and 9 were a's and go to c and b only at their renewals: a pops them meanwhile")
                .containsExactly(0, 3, 4, 6, 8, 9, 12, 15);
        assertThat(union(a, b, c, d))
                .as("every shard has a popper after a's renewal")
                .hasSize(SHARDS);

        nanos.addAndGet(ttl.toNanos() / 3);
        b.renew(store, keys, SHARDS);
        assertThat(union(a, b, c, d)).as("after b's").hasSize(SHARDS);
        c.renew(store, keys, SHARDS);
        assertThat(union(a, b, c, d)).as("after c's").hasSize(SHARDS);

        pastTheOverlap(ttl, a, b, c, d);
        assertThat(List.of(popped(a), popped(b), popped(c), popped(d)))
                .as("once the overlap is over, one popper per shard")
                .containsExactly(
                        new TreeSet<>(List.of(0, 4, 8, 12)),
                        new TreeSet<>(List.of(1, 5, 9, 13)),
                        new TreeSet<>(List.of(2, 6, 10, 14)),
                        new TreeSet<>(List.of(3, 7, 11, 15)));
    }

    @Test
    void aGracefulLeaverPopsOnUntilTheOthersRenewedAndTheOthersKeepTheirFormerShares() {
        Duration ttl = Duration.ofSeconds(9);
        List<ShardDivision> three = threeSeated(ttl);
        ShardDivision a = three.get(0);
        ShardDivision b = three.get(1);
        ShardDivision c = three.get(2);
        pastTheOverlap(ttl, a, b, c);

        // c stops gracefully: it gives its seat up and relays on (its share stays in force) until its workers stop
        c.leave(store, keys);
        assertThat(popped(c))
                .as("the leaver pops its share until its workers stop")
                .hasSize(5);
        a.renew(store, keys, SHARDS);
        assertThat(union(a, b, c)).as("a renewed, b not yet, c still relaying").hasSize(SHARDS);
        b.renew(store, keys, SHARDS);
        // c's workers stop (one renewal period plus a margin after its leave)
        assertThat(union(a, b)).as("both renewed: c's shards are theirs").hasSize(SHARDS);
    }

    @Test
    void aSeatGivenUpOwnsNothingUntilTheInstanceRenewsAgainAndThenJoinsAtTheEnd() {
        Duration ttl = Duration.ofSeconds(9);
        List<ShardDivision> two = twoSeated(ttl);
        ShardDivision a = two.get(0);
        ShardDivision b = two.get(1);

        b.giveUp(store, keys, "paused here");

        assertThat(popped(b)).as("given up: pops nothing, formers included").isEmpty();
        assertThat(b.divides()).isTrue();
        assertThat(b.givenUp()).isEqualTo("paused here");
        assertThat(seats()).containsOnlyKeys("a");
        List<Integer> gained = a.renew(store, keys, SHARDS);
        assertThat(a.share()).isEqualTo(new ShardDivision.Share(1, 0, 1));
        assertThat(gained)
                .as("a already popped every shard through its former share 0/1")
                .isEmpty();
        assertThat(popped(a)).hasSize(SHARDS);

        b.renew(store, keys, SHARDS);
        assertThat(b.givenUp()).isNull();
        assertThat(b.share())
                .as("a new seat, at the end of the order (the give-up moved K:cursor to 3)")
                .isEqualTo(new ShardDivision.Share(4, 1, 2));
        assertThat(owned(b)).containsExactly(1, 3, 5, 7, 9, 11, 13, 15);
    }

    @Test
    void everyChangeOfTheSeatsMovesTheCursorByOneAndARenewalWithoutOneLeavesIt() {
        Duration ttl = Duration.ofMillis(300);
        ShardDivision a = division("a", ttl);
        ShardDivision b = division("b", ttl);
        ShardDivision c = division("c", ttl);
        a.renew(store, keys, SHARDS);
        b.renew(store, keys, SHARDS);
        c.renew(store, keys, SHARDS);
        assertThat(get(keys.cursor())).as("three seats drawn").isEqualTo("3");
        a.renew(store, keys, SHARDS);
        assertThat(get(keys.cursor())).as("a renewal that changes nothing").isEqualTo("3");
        c.leave(store, keys);
        assertThat(get(keys.cursor())).as("c gave its seat up").isEqualTo("4");
        c.leave(store, keys);
        assertThat(get(keys.cursor()))
                .as("giving up a seat it does not hold changes nothing")
                .isEqualTo("4");

        // a and b both expire (their deadlines are real); c's next renewal drops both at once: one change
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> store.takeSeat(keys, "probe", 60_000).dropped() == 2);
        assertThat(get(keys.cursor()))
                .as("the probe's seat drawn (5), both expired seats dropped at once (6)")
                .isEqualTo("6");
    }

    @Test
    void aRenewalThatFindsTheSeatsChangedTwiceSinceItsLastPopsEveryShardUntilItsNextRenewal() {
        // c joins and leaves between two of a's renewals: a's share is the same before and after, but b renewed while
        // c held a seat and gave a the share 0 of 3 (shards 3, 6, 9, ...), which a never had
        Duration ttl = Duration.ofSeconds(9);
        List<ShardDivision> two = twoSeated(ttl);
        ShardDivision a = two.get(0);
        ShardDivision b = two.get(1);
        pastTheOverlap(ttl, a, b);
        assertThat(popped(a)).containsExactly(0, 2, 4, 6, 8, 10, 12, 14);

        ShardDivision c = division("c", ttl);
        c.renew(store, keys, SHARDS);
        nanos.addAndGet(ttl.toNanos() / 3);
        b.renew(store, keys, SHARDS);
        assertThat(b.share()).isEqualTo(new ShardDivision.Share(2, 1, 3));
        c.leave(store, keys);
        a.renew(store, keys, SHARDS);

        assertThat(a.share()).as("a's share did not change").isEqualTo(new ShardDivision.Share(1, 0, 2));
        assertThat(popped(a))
                .as("b's view gives a the shards s mod 3 = 0 until b renews again: a pops every shard meanwhile")
                .hasSize(SHARDS);
        nanos.addAndGet(ttl.toNanos() / 3);
        b.renew(store, keys, SHARDS);
        nanos.addAndGet(ShardDivision.JOIN_MARGIN.toNanos());
        assertThat(popped(a))
                .as("a renewal period and the margin later: its share again (its next renewal is due)")
                .containsExactly(0, 2, 4, 6, 8, 10, 12, 14);
        a.renew(store, keys, SHARDS);
        assertThat(popped(a))
                .as("no change since its last renewal: no window")
                .containsExactly(0, 2, 4, 6, 8, 10, 12, 14);
    }

    @Test
    void aLeaverWhoseSeatsChangedSinceItsLastRenewalPopsEveryShardThroughTheHandOver() {
        Duration ttl = Duration.ofSeconds(9);
        List<ShardDivision> four = threeSettledThenAFourthJoins(ttl);
        ShardDivision a = four.get(0);
        ShardDivision c = four.get(2);
        a.renew(store, keys, SHARDS);
        assertThat(a.share()).as("a's view gives c rank 2 of 4").isEqualTo(new ShardDivision.Share(1, 0, 4));

        // c stops before renewing into d's join: it never had the share 2 of 4 (shards 2, 6, 10, 14) a names it by
        c.leave(store, keys);
        assertThat(popped(c)).as("c pops every shard through its hand-over").hasSize(SHARDS);
        nanos.addAndGet(ttl.toNanos() / 3 + ShardDivision.JOIN_MARGIN.toNanos() + 1);
        assertThat(popped(c))
                .as("the hand-over over: its share of 3 again (its workers have stopped by now)")
                .hasSize(5);
    }

    private static TreeSet<Integer> union(ShardDivision... divisions) {
        TreeSet<Integer> union = new TreeSet<>();
        for (ShardDivision d : divisions) {
            union.addAll(popped(d));
        }
        return union;
    }

    private Map<String, String> seats() {
        try (RedisConnection c = kit.redis()) {
            Map<byte[], byte[]> raw = c.hashCommands().hGetAll(bytes(keys.seats()));
            Map<String, String> seats = new java.util.TreeMap<>();
            raw.forEach(
                    (k, v) -> seats.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
            return seats;
        }
    }

    private String get(String key) {
        try (RedisConnection c = kit.redis()) {
            byte[] v = c.stringCommands().get(bytes(key));
            return v == null ? null : new String(v, StandardCharsets.UTF_8);
        }
    }

    private void del(String key) {
        try (RedisConnection c = kit.redis()) {
            c.keyCommands().del(bytes(key));
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
