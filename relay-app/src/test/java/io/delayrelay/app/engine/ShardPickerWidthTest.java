package io.delayrelay.app.engine;

import java.util.function.IntPredicate;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker never pops a shard at or beyond the scan width it is given (the width shrinks when a reshard's draining
 * ends, and the schedule follows a moment later), however the shard came up. Complements {@link ShardPickerTest}.
 */
class ShardPickerWidthTest {

    private static final long NOW = 1_800_000_000_000L;
    private static final IntPredicate NONE = s -> false;

    private final ShardSchedule schedule = new ShardSchedule();
    private final ShardPicker worker = new ShardPicker(schedule, () -> NOW);

    @Test
    void aDrainedShardAtTheScanWidthIsNotPoppedAgain() {
        schedule.ensureWidth(4);
        nothingKnownDue(4);

        worker.drain(3);

        assertThat(worker.next(3, NONE, NONE)).isEqualTo(ShardPicker.NONE);
        assertThat(worker.lastKnownDue()).isFalse();
    }

    @Test
    void aDueShardAtTheScanWidthIsNotPicked() {
        schedule.ensureWidth(4);
        nothingKnownDue(4);
        schedule.record(3, NOW - 1);

        assertThat(worker.next(3, NONE, NONE)).isEqualTo(ShardPicker.NONE);
    }

    @Test
    void theLastShardWithinTheWidthIsPickedWhenDue() {
        schedule.ensureWidth(4);
        nothingKnownDue(4);
        schedule.record(2, NOW);

        assertThat(worker.next(3, NONE, NONE)).isEqualTo(2);
        worker.drain(2);
        assertThat(worker.next(3, NONE, NONE)).isEqualTo(2);
        assertThat(worker.lastKnownDue()).isTrue();
    }

    private void nothingKnownDue(int width) {
        for (int shard = 0; shard < width; shard++) {
            schedule.record(shard, -1);
        }
    }
}
