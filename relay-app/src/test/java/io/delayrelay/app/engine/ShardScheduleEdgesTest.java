package io.delayrelay.app.engine;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The edges of {@link ShardSchedule}: an empty schedule, shards at or beyond the width (a report or announcement for
 * a shard the width no longer covers is ignored, never an exception in a worker), a due time of 0, announcements of
 * the time already known, and a width change while a pop is under way. Complements {@link ShardScheduleTest}.
 */
class ShardScheduleEdgesTest {

    private static final long NOW = 1_800_000_000_000L;

    private final ShardSchedule schedule = new ShardSchedule();

    @Test
    void anEmptyScheduleHasNothingToClaimAndNothingEarliest() {
        assertThat(schedule.claimDue(NOW, s -> false)).isEqualTo(-1);
        assertThat(schedule.earliest()).isEqualTo(new ShardSchedule.Earliest(-1, ShardSchedule.NONE));
    }

    @Test
    void reportsAndAnnouncementsForShardsAtOrBeyondTheWidthAreIgnored() {
        schedule.ensureWidth(2);
        schedule.record(0, NOW + 10);
        schedule.record(1, -1);

        schedule.record(2, NOW);
        schedule.record(2, NOW, schedule.stamp(2));
        assertThat(schedule.stamp(2)).isZero();
        assertThat(schedule.lower(2, NOW)).isFalse();
        assertThat(schedule.lower(-1, NOW)).isFalse();

        assertThat(schedule.knownDue(2)).isEqualTo(ShardSchedule.NONE);
        assertThat(schedule.knownDue(-1)).isEqualTo(ShardSchedule.NONE);
        assertThat(schedule.earliest()).isEqualTo(new ShardSchedule.Earliest(0, NOW + 10));
    }

    @Test
    void aShardsKnownDueTimeIsWhatWasLastReportedAndNoneWhileClaimed() {
        schedule.ensureWidth(2);
        assertThat(schedule.knownDue(1)).as("a new shard is due at once").isZero();
        schedule.record(0, NOW + 5);
        schedule.record(1, -1);

        assertThat(schedule.knownDue(0)).isEqualTo(NOW + 5);
        assertThat(schedule.knownDue(1)).isEqualTo(ShardSchedule.NONE);
        assertThat(schedule.claimDue(NOW + 5, s -> false)).isZero();
        assertThat(schedule.knownDue(0)).isEqualTo(ShardSchedule.NONE);
    }

    @Test
    void aDueTimeOfZeroIsDueOnlyMinusOneMeansEmpty() {
        schedule.ensureWidth(2);

        schedule.record(0, 0);
        schedule.record(1, 0, schedule.stamp(1));

        assertThat(schedule.knownDue(0)).isZero();
        assertThat(schedule.knownDue(1)).isZero();
        schedule.record(0, -1, schedule.stamp(0));
        assertThat(schedule.knownDue(0)).isEqualTo(ShardSchedule.NONE);
    }

    @Test
    void anAnnouncementOfTheDueTimeAlreadyKnownIsNotEarlier() {
        schedule.ensureWidth(1);
        schedule.record(0, NOW + 100);

        assertThat(schedule.lower(0, NOW + 100)).isFalse();
        assertThat(schedule.lower(0, NOW + 99)).isTrue();
        assertThat(schedule.knownDue(0)).isEqualTo(NOW + 99);
    }

    /** The lowering counts survive a resize: a pop that started before it must not erase a later announcement. */
    @Test
    void anAnnouncementDuringAPopSurvivesAWidthChangeInBetween() {
        schedule.ensureWidth(1);
        schedule.record(0, NOW + 9_000);
        schedule.lower(0, NOW + 5_000);
        long stamp = schedule.stamp(0);

        schedule.ensureWidth(2);
        schedule.lower(0, NOW + 100);
        schedule.record(0, -1, stamp);

        assertThat(schedule.knownDue(0)).isEqualTo(NOW + 100);
    }
}
