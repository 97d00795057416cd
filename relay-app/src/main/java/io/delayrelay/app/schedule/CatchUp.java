package io.delayrelay.app.schedule;

import java.util.Locale;

/** What fires of the slots missed while no relay ran (docs/schedules.md). */
public enum CatchUp {
    /** Each missed slot fires once, oldest first (at most {@link SlotPlanner#MAX_CATCH_UP}). */
    ALL,
    /** The latest missed slot fires; the others are counted as skipped. */
    LAST,
    /** None fires; all are counted as skipped. */
    NONE;

    /** The YAML spelling: all, last, none. */
    public String text() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** From the YAML spelling, any case. */
    public static CatchUp of(String text) {
        return valueOf(text.trim().toUpperCase(Locale.ROOT));
    }
}
