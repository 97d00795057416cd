package io.delayrelay.app.schedule;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Map;

import io.delayrelay.app.config.ScheduleSettings;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The slot rules of docs/schedules.md, decided without Redis: catch-up, pause, lead, daylight saving. */
class SlotPlannerTest {

    private static final long T0 = Instant.parse("2026-11-29T10:00:00Z").toEpochMilli();

    private static ScheduleDefinition every(String period, String catchUp) {
        ScheduleSettings s = new ScheduleSettings();
        s.setBusiness("b");
        s.setEvery(Duration.parse("PT" + period.toUpperCase()));
        s.setCatchUp(catchUp);
        return ScheduleDefinition.of("t", "tick", s, false);
    }

    private static ScheduleDefinition cron(String cron, String zone) {
        ScheduleSettings s = new ScheduleSettings();
        s.setBusiness("b");
        s.setCron(cron);
        s.setZone(zone);
        return ScheduleDefinition.of("t", "nightly", s, false);
    }

    @Test
    void aNewScheduleWritesItsFirstSlotWithinTheLeadAndNothingBeforeNow() {
        SlotPlan plan = SlotPlanner.plan(every("1s", "last"), null, false, false, T0 + 300);
        assertThat(plan.slots()).containsExactly(T0 + 1000);
        assertThat(plan.skipped()).isEmpty();
        assertThat(plan.pendingId()).isEqualTo("tick@" + (T0 + 1000));
        assertThat(plan.prev()).isEqualTo(Long.toString(T0 + 300));
        // the next tend writes the next slot when this one falls due
        assertThat(plan.nextTickMs()).isEqualTo(T0 + 1000);
    }

    @Test
    void aLongPeriodIsWrittenOnlyLeadAheadOfItsSlot() {
        SlotPlan plan = SlotPlanner.plan(every("1m", "last"), T0, false, false, T0 + 1000);
        assertThat(plan.slots()).isEmpty();
        assertThat(plan.cursor()).isEqualTo(T0);
        assertThat(plan.nextTickMs()).isEqualTo(T0 + 60_000 - SlotPlanner.LEAD_MS);
        SlotPlan atTick = SlotPlanner.plan(every("1m", "last"), T0, false, false, T0 + 55_000);
        assertThat(atTick.slots()).containsExactly(T0 + 60_000);
        assertThat(atTick.nextTickMs()).isEqualTo(T0 + 120_000 - SlotPlanner.LEAD_MS);
    }

    @Test
    void aSlotLateWithinTheGraceIsWrittenNotSkipped() {
        // tended 1.5 s after slot T0+1000 (cursor at T0): the slot fires late, and the next one is pending
        SlotPlan plan = SlotPlanner.plan(every("1s", "none"), T0, false, false, T0 + 2_500);
        assertThat(plan.skipped()).isEmpty();
        assertThat(plan.slots()).containsExactly(T0 + 1000, T0 + 2000, T0 + 3000);
        assertThat(plan.prev()).isEqualTo(Long.toString(T0 + 2000));
    }

    @Test
    void catchUpLastFiresTheLatestMissedSlotAndCountsTheOthers() {
        // no relay ran for 7 s after slot T0 was handed over: slots T0+1 s .. T0+7 s passed, now T0+8.2 s
        SlotPlan plan = SlotPlanner.plan(every("1s", "last"), T0, false, false, T0 + 8_200);
        // missed = more than the grace (2 s) late: T0+1..T0+6; T0+7 and T0+8 are late within the grace
        assertThat(plan.skipped()).containsOnlyKeys(SlotPlanner.CATCH_UP);
        assertThat(plan.skipped().get(SlotPlanner.CATCH_UP).count()).isEqualTo(5);
        assertThat(plan.slots()).containsExactly(T0 + 6_000, T0 + 7_000, T0 + 8_000, T0 + 9_000);
    }

    @Test
    void catchUpAllFiresEachMissedSlotOnceOldestFirst() {
        SlotPlan plan = SlotPlanner.plan(every("1s", "all"), T0, false, false, T0 + 8_200);
        assertThat(plan.skipped()).isEmpty();
        assertThat(plan.slots())
                .containsExactly(
                        T0 + 1_000,
                        T0 + 2_000,
                        T0 + 3_000,
                        T0 + 4_000,
                        T0 + 5_000,
                        T0 + 6_000,
                        T0 + 7_000,
                        T0 + 8_000,
                        T0 + 9_000);
    }

    @Test
    void catchUpNoneFiresNoMissedSlot() {
        SlotPlan plan = SlotPlanner.plan(every("1s", "none"), T0, false, false, T0 + 8_200);
        assertThat(plan.skipped().get(SlotPlanner.CATCH_UP).count()).isEqualTo(6);
        assertThat(plan.skipped().get(SlotPlanner.CATCH_UP).samples()).first().isEqualTo("2026-11-29T10:00:01Z");
        assertThat(plan.slots()).containsExactly(T0 + 7_000, T0 + 8_000, T0 + 9_000);
    }

    @Test
    void catchUpAllIsBoundedAndCountsTheOldestBeyondTheLimit() {
        long now = T0 + (SlotPlanner.MAX_CATCH_UP + 500) * 1000L + 2_500;
        SlotPlan plan = SlotPlanner.plan(every("1s", "all"), T0, false, false, now);
        // more than 2 s late: T0+1 s .. T0+1500 s; the oldest 500 are over the limit
        assertThat(plan.skipped().get(SlotPlanner.CATCH_UP_LIMIT).count()).isEqualTo(500);
        // the 1,000 newest missed, the two late within the grace, the one ahead
        assertThat(plan.slots())
                .hasSize(SlotPlanner.MAX_CATCH_UP + 3)
                .isSorted()
                .startsWith(T0 + 501_000);
    }

    @Test
    void whilePausedTheSlotsPassedAreSkippedWithReasonPausedAndSoAfterTheResume() {
        SlotPlan paused = SlotPlanner.plan(every("1s", "all"), T0, false, true, T0 + 3_500);
        assertThat(paused.slots()).isEmpty();
        assertThat(paused.held()).isTrue();
        assertThat(paused.skipped().get(SlotPlanner.PAUSED).count()).isEqualTo(3);
        assertThat(paused.cursor()).isEqualTo(T0 + 3_000);
        assertThat(paused.nextTickMs()).isEqualTo(T0 + 3_500 + SlotPlanner.PAUSED_TICK_MS);
        // resumed 10 s later: the slots passed meanwhile are paused ones, not caught up, whatever the policy
        SlotPlan resumed = SlotPlanner.plan(every("1s", "all"), paused.cursor(), true, false, T0 + 13_500);
        assertThat(resumed.skipped()).containsOnlyKeys(SlotPlanner.PAUSED);
        assertThat(resumed.skipped().get(SlotPlanner.PAUSED).count()).isEqualTo(10);
        assertThat(resumed.slots()).containsExactly(T0 + 14_000);
        assertThat(resumed.held()).isFalse();
    }

    @Test
    void aLocalTimeInTheSpringForwardGapIsSkippedAndCounted() {
        // New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT, 02:30 does not exist that day
        ScheduleDefinition def = cron("0 30 2 * * *", "America/New_York");
        long before = ZonedDateTime.of(2026, 3, 7, 2, 30, 0, 0, ZoneId.of("America/New_York"))
                .toInstant()
                .toEpochMilli();
        long next = ZonedDateTime.of(2026, 3, 9, 2, 30, 0, 0, ZoneId.of("America/New_York"))
                .toInstant()
                .toEpochMilli();
        SlotPlan plan = SlotPlanner.plan(def, before, false, false, next - 1_000);
        assertThat(plan.slots()).containsExactly(next);
        assertThat(plan.skipped()).containsOnlyKeys(SlotPlanner.DST_GAP);
        assertThat(plan.skipped().get(SlotPlanner.DST_GAP).count()).isEqualTo(1);
        assertThat(plan.skipped().get(SlotPlanner.DST_GAP).samples().get(0)).startsWith("2026-03-08T02:30");
    }

    @Test
    void aLocalTimeThatOccursTwiceFiresOnceAtItsFirstOccurrence() {
        // New York, 2026-11-01: 01:59:59 EDT falls back to 01:00 EST, 01:30 occurs twice
        ZoneId ny = ZoneId.of("America/New_York");
        Recurrence r = cron("0 30 1 * * *", "America/New_York").recurrence();
        long oct31 = ZonedDateTime.of(2026, 10, 31, 1, 30, 0, 0, ny).toInstant().toEpochMilli();
        Recurrence.Next first = r.next(oct31);
        assertThat(Instant.ofEpochMilli(first.slotMs())).isEqualTo(Instant.parse("2026-11-01T05:30:00Z")); // EDT
        Recurrence.Next after = r.next(first.slotMs());
        assertThat(Instant.ofEpochMilli(after.slotMs())).isEqualTo(Instant.parse("2026-11-02T06:30:00Z")); // EST
        // tended during the repeated hour (01:10 EST, after the first 01:30): no second fire of 01:30
        assertThat(Instant.ofEpochMilli(
                        r.next(Instant.parse("2026-11-01T06:10:00Z").toEpochMilli())
                                .slotMs()))
                .isEqualTo(Instant.parse("2026-11-02T06:30:00Z"));
        // a cron every 15 minutes passes the repeated hour once: 01:45 EDT is followed by 02:00 EST
        Recurrence quarter = cron("0 */15 * * * *", "America/New_York").recurrence();
        long at0145 = Instant.parse("2026-11-01T05:45:00Z").toEpochMilli();
        assertThat(Instant.ofEpochMilli(quarter.next(at0145).slotMs()))
                .isEqualTo(Instant.parse("2026-11-01T07:00:00Z"));
    }

    @Test
    void aFixedPeriodFallsOnMultiplesSinceTheEpochSoEveryInstanceAgrees() {
        Recurrence r = every("30s", "last").recurrence();
        assertThat(r.next(T0 + 1).slotMs()).isEqualTo(T0 + 30_000);
        assertThat(r.next(T0 + 30_000).slotMs()).isEqualTo(T0 + 60_000);
        assertThat(r.describe()).isEqualTo("every 30s");
    }

    @Test
    void aCronThatNeverMatchesHasNoNextTick() {
        SlotPlan plan = SlotPlanner.plan(cron("0 0 0 30 2 *", "UTC"), null, false, false, T0);
        assertThat(plan.slots()).isEmpty();
        assertThat(plan.nextTickMs()).isEqualTo(SlotPlan.NEVER);
    }

    @Test
    void theFingerprintFollowsTimingPayloadAndHeadersOnly() {
        ScheduleDefinition a = every("1s", "last");
        assertThat(every("1s", "all").fingerprint()).isEqualTo(a.fingerprint());
        assertThat(every("2s", "last").fingerprint()).isNotEqualTo(a.fingerprint());
        ScheduleSettings s = a.settings();
        s.setHeaders(Map.of("tenant", "acme"));
        assertThat(ScheduleDefinition.of("t", "tick", s, false).fingerprint()).isNotEqualTo(a.fingerprint());
        assertThat(List.of(a.settings().getCatchUp())).containsExactly("last");
    }
}
