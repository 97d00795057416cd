package io.delayrelay.app.schedule;

import java.util.List;
import java.util.Map;

/**
 * What one tend of a schedule decides: the slot entries to write, the slots skipped (by reason), where the cursor goes
 * and when the schedule is next tended. Written by {@link ScheduleStore#write} only if the cursor did not move
 * meanwhile.
 *
 * @param cursor     every slot up to it is decided (written or skipped), epoch ms
 * @param pendingId  the id of the last slot entry written now ('' when none is written)
 * @param prev       the cursor before that entry ('' when none is written): a withdrawal of it moves the cursor back
 * @param slots      the slot entries to write, in order, epoch ms
 * @param skipped    slots skipped now, by reason
 * @param nextTickMs when the schedule is next tended; {@link #NEVER} when it has no further slot
 * @param held       the schedule was tended paused (its next unpaused tend skips the slots passed with reason paused)
 */
public record SlotPlan(
        long cursor,
        String pendingId,
        String prev,
        List<Long> slots,
        Map<String, Skipped> skipped,
        long nextTickMs,
        boolean held) {

    /** The tick of a schedule that has no further slot. */
    public static final long NEVER = Long.MAX_VALUE;

    /**
     * Skipped slots of one reason.
     *
     * @param count   how many
     * @param samples the first few, as readable times in the schedule's zone
     */
    public record Skipped(long count, List<String> samples) {}

    /** The entry id of a slot: {@code <schedule>@<slot epoch ms>}, also its message id. */
    public static String idOf(String schedule, long slotMs) {
        return schedule + "@" + slotMs;
    }
}
