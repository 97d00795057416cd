package io.delayrelay.app.schedule;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decides one tend of a schedule from its cursor and the Redis time (pure: no I/O). The rules (docs/schedules.md):
 *
 * <ul>
 *   <li>a slot is written as an entry at most {@link #LEAD_MS} before it is due, one future slot at a time, so a pause
 *       or a new definition withdraws at most one entry, and no entry is ever far enough ahead to go to the cold tier;
 *   <li>a slot more than {@link #GRACE_MS} past when it is tended was missed (no relay ran): the catch-up policy decides
 *       it; one less late is written and fires at once;
 *   <li>while paused, the slots passed are skipped with reason {@code paused}, also those passed before the resume;
 *   <li>a local time in a daylight-saving gap is skipped with reason {@code dst-gap}.
 * </ul>
 */
public final class SlotPlanner {

    /** How far ahead of its slot an entry is written (below the least cold-after, 10 s). */
    public static final long LEAD_MS = 5_000;
    /** A slot later than this when tended was missed. */
    public static final long GRACE_MS = 2_000;
    /** How often a paused schedule is tended (to count the slots it passes). */
    public static final long PAUSED_TICK_MS = 60_000;
    /** Most missed slots catch-up {@code all} fires; older ones are skipped with reason {@code catch-up-limit}. */
    public static final int MAX_CATCH_UP = 1_000;
    /** Most slots of a cron schedule counted one by one in a tend; past it the count is a lower bound (logged). */
    static final int MAX_COUNTED = 1_000_000;

    public static final String PAUSED = "paused";
    public static final String CATCH_UP = "catch-up";
    public static final String CATCH_UP_LIMIT = "catch-up-limit";
    public static final String DST_GAP = "dst-gap";

    private static final int SAMPLES = 5;

    private SlotPlanner() {}

    /**
     * Plans a tend.
     *
     * @param def      the schedule
     * @param cursor   its cursor, or null for a schedule tended the first time (nothing before now was missed)
     * @param held     its last tend was paused
     * @param paused   it is paused now
     * @param nowMs    Redis time
     */
    public static SlotPlan plan(ScheduleDefinition def, Long cursor, boolean held, boolean paused, long nowMs) {
        Recurrence recurrence = def.recurrence();
        ZoneId zone = recurrence instanceof Recurrence.Cron cron ? cron.zone() : ZoneOffset.UTC;
        Skips skips = new Skips(zone);
        long at = cursor == null ? nowMs : cursor;
        if (paused) {
            Recurrence.Next n = recurrence.next(at);
            for (long counted = 0; n != null && n.slotMs() <= nowMs && counted < MAX_COUNTED; counted++) {
                skips.gaps(n);
                skips.add(PAUSED, n.slotMs());
                at = n.slotMs();
                n = recurrence.next(at);
            }
            return new SlotPlan(at, "", "", List.of(), skips.done(), nowMs + PAUSED_TICK_MS, true);
        }
        // the slots missed: catch-up decides them (after a pause: skipped, reason paused)
        // a slot before it was missed; after a pause every slot passed was passed paused, however recent
        long lateBound = held ? nowMs + 1 : nowMs - GRACE_MS;
        String reason = held ? PAUSED : CATCH_UP;
        CatchUp policy = held ? CatchUp.NONE : def.catchUp();
        Deque<Long> kept = new ArrayDeque<>();
        long missed = 0;
        // the slot enumerated before the last one: the cursor a withdrawal of the last written entry goes back to
        long previous = at;
        Recurrence.Next n = recurrence.next(at);
        while (n != null && n.slotMs() < lateBound) {
            if (missed >= MAX_COUNTED) {
                skips.lowerBound = true;
                n = recurrence.next(lateBound - 1);
                break;
            }
            skips.gaps(n);
            missed++;
            kept.addLast(n.slotMs());
            int keep = policy == CatchUp.ALL ? MAX_CATCH_UP : policy == CatchUp.LAST ? 1 : 0;
            while (kept.size() > keep) {
                skips.add(policy == CatchUp.ALL ? CATCH_UP_LIMIT : reason, kept.removeFirst());
            }
            previous = at;
            at = n.slotMs();
            n = recurrence.next(at);
        }
        List<Long> slots = new ArrayList<>(kept);
        // late within the grace: written, fire at once; then the one future slot, if within the lead
        while (n != null && n.slotMs() <= nowMs) {
            skips.gaps(n);
            slots.add(n.slotMs());
            previous = at;
            at = n.slotMs();
            n = recurrence.next(at);
        }
        long nextTick;
        if (n != null && n.slotMs() - LEAD_MS <= nowMs) {
            skips.gaps(n);
            slots.add(n.slotMs());
            previous = at;
            at = n.slotMs();
            Recurrence.Next following = recurrence.next(n.slotMs());
            nextTick = following == null ? SlotPlan.NEVER : Math.max(n.slotMs(), following.slotMs() - LEAD_MS);
        } else {
            nextTick = n == null ? SlotPlan.NEVER : n.slotMs() - LEAD_MS;
        }
        if (slots.isEmpty()) {
            return new SlotPlan(at, "", "", List.of(), skips.done(), nextTick, false);
        }
        // the last slot written is the last one enumerated (older ones only are ever skipped)
        return new SlotPlan(
                at, SlotPlan.idOf(def.name(), at), Long.toString(previous), slots, skips.done(), nextTick, false);
    }

    /** Skipped slots by reason, with the first few as readable times. */
    private static final class Skips {
        final ZoneId zone;
        final Map<String, long[]> counts = new LinkedHashMap<>();
        final Map<String, List<String>> samples = new LinkedHashMap<>();
        boolean lowerBound;

        Skips(ZoneId zone) {
            this.zone = zone;
        }

        void add(String reason, long slotMs) {
            sample(
                    reason,
                    Instant.ofEpochMilli(slotMs).atZone(zone).toOffsetDateTime().toString());
        }

        void gaps(Recurrence.Next n) {
            for (LocalDateTime gap : n.gaps()) {
                sample(DST_GAP, gap + " (does not exist in " + zone + ")");
            }
        }

        private void sample(String reason, String text) {
            counts.computeIfAbsent(reason, r -> new long[1])[0]++;
            List<String> list = samples.computeIfAbsent(reason, r -> new ArrayList<>(SAMPLES));
            if (list.size() < SAMPLES) {
                list.add(text);
            }
        }

        Map<String, SlotPlan.Skipped> done() {
            Map<String, SlotPlan.Skipped> out = new LinkedHashMap<>();
            counts.forEach((reason, count) -> {
                List<String> list = new ArrayList<>(samples.get(reason));
                if (lowerBound && !reason.equals(DST_GAP)) {
                    list.add("at least: counting stopped after " + MAX_COUNTED + " slots");
                }
                out.put(reason, new SlotPlan.Skipped(count[0], List.copyOf(list)));
            });
            return out;
        }
    }
}
