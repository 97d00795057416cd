package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.IntPredicate;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.OutgoingMessages;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** How a worker picks its next shard, with a counting cursor and given Redis times (no Redis, no sleep). */
class ShardCursorTest {

    private static final long NOW = 1_800_000_000_000L;
    private static final IntPredicate NONE = s -> false;

    private final ShardSchedule schedule = new ShardSchedule();
    private final List<Integer> reservations = new ArrayList<>();
    private long cursorValue;
    private final ShardCursor cursor = new ShardCursor(
            schedule,
            (keys, n) -> {
                reservations.add(n);
                cursorValue += n;
                return cursorValue;
            },
            () -> NOW);

    @Test
    void walksItsReservedBlockOfTheSharedCursorWithOneRedisCallPerSweep() {
        BusinessSpec spec = spec(8, 2);
        schedule.ensureWidth(8);
        nothingKnownDue(8);

        List<Integer> picked = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            picked.add(cursor.next(spec, 8, NONE, NONE));
        }

        assertThat(picked)
                .as("cursor positions 1..8 (INCRBY returns the last), mod 8")
                .containsExactly(1, 2, 3, 4, 5, 6, 7, 0);
        assertThat(reservations).as("sweep length = ceil(8 shards / 2 threads)").containsExactly(4, 4);
    }

    @Test
    void aHintComesFirstThenShardsKnownDueThenTheCursor() {
        BusinessSpec spec = spec(4, 1);
        schedule.ensureWidth(4);
        nothingKnownDue(4);
        schedule.record(2, NOW - 1);

        cursor.hint(3);
        assertThat(cursor.next(spec, 4, NONE, NONE)).as("hinted").isEqualTo(3);
        assertThat(cursor.next(spec, 4, NONE, NONE)).as("known due").isEqualTo(2);
        assertThat(cursor.next(spec, 4, NONE, NONE)).as("cursor").isEqualTo(1);
        assertThat(reservations).hasSize(1);
    }

    @Test
    void aHintedShardIsPoppedEvenWithABatchInFlightButNeverWhenQuarantined() {
        BusinessSpec spec = spec(4, 1);
        schedule.ensureWidth(4);
        nothingKnownDue(4);

        cursor.hint(1);
        assertThat(cursor.next(spec, 4, NONE, s -> s == 1))
                .as("busy hinted shard: drained on, in order")
                .isEqualTo(1);
        cursor.hint(1);
        assertThat(cursor.next(spec, 4, s -> s == 1, NONE))
                .as("quarantined hinted shard: next of the cursor")
                .isEqualTo(2);
    }

    @Test
    void quarantinedAndBusyShardsArePassedOver() {
        BusinessSpec spec = spec(4, 1);
        schedule.ensureWidth(4);
        nothingKnownDue(4);
        Set<Integer> quarantined = Set.of(0, 2);

        assertThat(cursor.next(spec, 4, quarantined::contains, s -> s == 1)).isEqualTo(3);
        assertThat(cursor.next(spec, 4, quarantined::contains, s -> s == 1))
                .as("after a full turn")
                .isEqualTo(3);
    }

    @Test
    void everyShardBusyGivesABusyOneToWaitFor() {
        BusinessSpec spec = spec(3, 1);
        schedule.ensureWidth(3);
        nothingKnownDue(3);

        assertThat(cursor.next(spec, 3, s -> s == 1, s -> true))
                .as("first busy one of the turn")
                .isEqualTo(2);
    }

    @Test
    void everyShardQuarantinedGivesNoShardSoTheWorkerSleeps() {
        BusinessSpec spec = spec(3, 1);
        schedule.ensureWidth(3);

        assertThat(cursor.next(spec, 3, s -> true, NONE)).isEqualTo(ShardCursor.NO_SHARD);
        assertThat(cursor.next(spec(1, 1), 1, s -> true, NONE)).isEqualTo(ShardCursor.NO_SHARD);
    }

    @Test
    void sweepLengthIsEachThreadsShareOfTheShards() {
        assertThat(ShardCursor.sweepLength(16, 2)).isEqualTo(8);
        assertThat(ShardCursor.sweepLength(5, 2)).isEqualTo(3);
        assertThat(ShardCursor.sweepLength(1, 4)).isEqualTo(1);
    }

    private void nothingKnownDue(int width) {
        for (int shard = 0; shard < width; shard++) {
            schedule.record(shard, -1);
        }
    }

    private static BusinessSpec spec(int shards, int threads) {
        return new BusinessSpec(
                "cursor",
                DelayQueueKeys.forBusiness("cursor"),
                shards,
                threads,
                "relay-cursor-",
                "ex",
                "rk",
                "direct",
                false,
                10,
                16L << 20,
                Duration.ofMillis(100),
                Duration.ofSeconds(30),
                5,
                Duration.ofSeconds(1),
                Duration.ofMinutes(1),
                Duration.ofSeconds(5),
                false,
                OutgoingMessages.DEFAULT);
    }
}
