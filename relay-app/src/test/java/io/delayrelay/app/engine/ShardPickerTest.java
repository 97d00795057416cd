package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.IntPredicate;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** How a worker picks its next shard from the business's schedule, with given Redis times (no Redis, no sleep). */
class ShardPickerTest {

    private static final long NOW = 1_800_000_000_000L;
    private static final IntPredicate NONE = s -> false;

    private final ShardSchedule schedule = new ShardSchedule();
    private final ShardPicker workerA = new ShardPicker(schedule, () -> NOW);
    private final ShardPicker workerB = new ShardPicker(schedule, () -> NOW);

    @Test
    void aShardIsPickedOnlyWhenKnownDueAndByOneWorker() {
        schedule.ensureWidth(4);
        nothingKnownDue(4);
        schedule.record(1, NOW + 1);
        schedule.record(2, NOW);

        assertThat(workerA.next(4, NONE, NONE)).as("shard 2 is due now").isEqualTo(2);
        assertThat(workerB.next(4, NONE, NONE))
                .as("claimed by A; shard 1 is due a millisecond later")
                .isEqualTo(ShardPicker.NONE);
        assertThat(workerA.lastKnownDue()).isFalse();
    }

    @Test
    void aSweepHasEveryShardPoppedExactlyOnceAcrossTheWorkers() {
        schedule.ensureWidth(16);
        nothingKnownDue(16);
        schedule.markAllDue();

        List<Integer> picked = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            int shard = (i % 2 == 0 ? workerA : workerB).next(16, NONE, NONE);
            if (shard != ShardPicker.NONE) {
                picked.add(shard);
            }
        }

        assertThat(picked).hasSize(16).doesNotHaveDuplicates();
    }

    @Test
    void aNewShardStartsDue() {
        schedule.ensureWidth(2);

        assertThat(List.of(workerA.next(2, NONE, NONE), workerA.next(2, NONE, NONE)))
                .containsExactlyInAnyOrder(0, 1);
        assertThat(workerA.next(2, NONE, NONE)).isEqualTo(ShardPicker.NONE);
    }

    @Test
    void theShardBeingDrainedComesFirstKnownDueEvenWithABatchInFlight() {
        schedule.ensureWidth(4);
        nothingKnownDue(4);
        schedule.record(3, NOW - 5);

        workerA.drain(1);
        assertThat(workerA.next(4, NONE, s -> s == 1)).isEqualTo(1);
        assertThat(workerA.lastKnownDue()).as("its last pop came back full").isTrue();
        assertThat(workerA.next(4, NONE, NONE)).as("then the schedule").isEqualTo(3);
        assertThat(workerA.lastKnownDue()).isFalse();
    }

    /**
     * Finding 5 (review 2026-11-24): a drain pop is under way (its shard's last pop came back full and reported
     * "due now"); a producer's plain ZADD to that shard, executed in Redis just after the drain pop, is notified.
     * The keyspace peek is skipped only for a shard a worker pops soon anyway; the drain pop already read the shard,
     * so the write must be peeked and its due time must outlive the drain pop's report.
     */
    @Test
    void aWriteNotifiedWhileADrainPopIsUnderWayIsPeekedAndOutlivesThePopsReport() {
        schedule.ensureWidth(2);
        nothingKnownDue(2);
        schedule.record(1, NOW); // a full batch: more is due now
        workerA.drain(1);

        assertThat(workerA.next(2, NONE, NONE)).isEqualTo(1);
        long stamp = schedule.stamp(1);
        // the drain pop executes in Redis; then the write; then its notification reaches the peek gate
        boolean peekSkipped = schedule.knownDue(1) <= NOW + 5; // BusinessRelay.popsWithin(shard, ShardPeeks.WINDOW_MS)
        if (!peekSkipped) {
            schedule.lower(1, NOW + 2_000); // the peek read the write's due time
        }
        schedule.record(1, NOW + 30_000, stamp); // the drain pop's report: its earliest lease deadline

        assertThat(peekSkipped)
                .as("the shard is claimed by the drain pop, so its write is peeked")
                .isFalse();
        assertThat(schedule.earliest()).isEqualTo(new ShardSchedule.Earliest(1, NOW + 2_000));
        assertThat(workerB.next(2, NONE, NONE))
                .as("a shard being drained is claimed: no other worker pops it meanwhile")
                .isEqualTo(ShardPicker.NONE);
    }

    @Test
    void aShardWithoutABatchInFlightIsPreferredElseABusyOneIsTaken() {
        schedule.ensureWidth(3);
        nothingKnownDue(3);
        schedule.record(0, NOW - 1);
        schedule.record(2, NOW - 1);

        assertThat(workerA.next(3, NONE, s -> s == 0)).isEqualTo(2);
        assertThat(workerA.next(3, NONE, s -> s == 0))
                .as("only the busy one is due: popped again, its batches leave in order on the worker's channel")
                .isEqualTo(0);
    }

    @Test
    void quarantinedShardsArePassedOverEvenWhenDrainedOrDue() {
        schedule.ensureWidth(3);
        nothingKnownDue(3);
        schedule.markAllDue();
        Set<Integer> quarantined = Set.of(0, 2);

        workerA.drain(0);
        assertThat(workerA.next(3, quarantined::contains, NONE)).isEqualTo(1);
        assertThat(workerA.next(3, quarantined::contains, NONE)).isEqualTo(ShardPicker.NONE);
        assertThat(schedule.earliest(quarantined::contains).shard())
                .as("a worker does not sleep until a quarantined shard's due time (it would not sleep at all)")
                .isEqualTo(-1);
        assertThat(workerA.next(3, NONE, NONE)).as("once released, still due").isIn(0, 2);
    }

    private void nothingKnownDue(int width) {
        for (int shard = 0; shard < width; shard++) {
            schedule.record(shard, -1);
        }
    }
}
