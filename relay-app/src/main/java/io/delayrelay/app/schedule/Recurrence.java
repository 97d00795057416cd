package io.delayrelay.app.schedule;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

import org.springframework.scheduling.support.CronExpression;

/** When a schedule's slots fall: a cron expression in a time zone, or a fixed period. */
public sealed interface Recurrence permits Recurrence.Cron, Recurrence.Every {

    /**
     * The first slot after {@code afterMs}.
     *
     * @return the slot, with the local times of a daylight-saving gap passed on the way (each a slot that does not
     *     exist that day); null when the recurrence has no slot after it
     */
    Next next(long afterMs);

    /** The definition as the YAML gives it: {@code cron 0 0 9 * * MON-FRI Asia/Shanghai} or {@code every 30s}. */
    String describe();

    /**
     * A slot and the daylight-saving gaps before it.
     *
     * @param slotMs the slot, epoch ms
     * @param gaps   local times of the cron that did not exist (a daylight-saving gap) between the previous slot and
     *               this one, in order
     */
    record Next(long slotMs, List<LocalDateTime> gaps) {}

    /**
     * A cron expression (six fields, seconds first) in a zone. Its local times map to instants by the zone's rules, as
     * Temporal documents them: a local time that does not exist that day (a spring-forward gap) is no slot and is
     * reported as a gap; one that occurs twice (a fall-back overlap) is one slot, at its first occurrence.
     */
    record Cron(CronExpression expression, String text, ZoneId zone) implements Recurrence {

        /** Local times tried for one next slot before giving up (an expression such as Feb 30 never matches). */
        private static final int MAX_TRIES = 10_000;

        @Override
        public Next next(long afterMs) {
            LocalDateTime local = LocalDateTime.ofInstant(Instant.ofEpochMilli(afterMs), zone);
            List<LocalDateTime> gaps = null;
            for (int i = 0; i < MAX_TRIES; i++) {
                local = expression.next(local);
                if (local == null) {
                    return null;
                }
                List<ZoneOffset> offsets = zone.getRules().getValidOffsets(local);
                if (offsets.isEmpty()) {
                    if (gaps == null) {
                        gaps = new ArrayList<>(2);
                    }
                    gaps.add(local);
                    continue;
                }
                // an overlap lists the offset before the transition first: the first occurrence
                long slot = local.toInstant(offsets.get(0)).toEpochMilli();
                if (slot > afterMs) {
                    return new Next(slot, gaps == null ? List.of() : List.copyOf(gaps));
                }
            }
            return null;
        }

        @Override
        public String describe() {
            return "cron " + text + " " + zone;
        }
    }

    /** A fixed period; slots are whole multiples of it since the epoch, so every instance finds the same ones. */
    record Every(Duration period) implements Recurrence {

        @Override
        public Next next(long afterMs) {
            long p = period.toMillis();
            return new Next(Math.floorDiv(afterMs, p) * p + p, List.of());
        }

        @Override
        public String describe() {
            return "every " + period.toString().substring(2).toLowerCase(java.util.Locale.ROOT);
        }
    }
}
