package io.delayrelay.api;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.springframework.core.NestedExceptionUtils;

/**
 * A reschedule refused because the new due time is after the entry's own expiry (a per-message option,
 * {@link ScheduleOptions}): the entry would otherwise be published after it. Nothing changed; the entry keeps its
 * due time. To deliver later, schedule the id again with a later expiry or none.
 */
public class RescheduleAfterExpiryException extends IllegalArgumentException {

    /** reschedule.lua's error reply for it (contract/reschedule.lua). */
    private static final Pattern REFUSAL =
            Pattern.compile("^EXPIRY delay-relay reschedule\\.lua: .* is after the entry's expiry (\\d+)");

    private final String business;
    private final String id;
    private final long dueAtMs;
    private final long expiryMs;

    public RescheduleAfterExpiryException(String business, String id, long dueAtMs, long expiryMs, Throwable cause) {
        super(
                "reschedule of id '" + id + "' (business '" + business + "') to " + dueAtMs
                        + " refused: it is after the entry's expiry " + expiryMs
                        + " (schedule the id again to give it a later expiry or none)",
                cause);
        this.business = business;
        this.id = id;
        this.dueAtMs = dueAtMs;
        this.expiryMs = expiryMs;
    }

    public String business() {
        return business;
    }

    public String id() {
        return id;
    }

    /** The refused due time, epoch ms. */
    public long dueAtMs() {
        return dueAtMs;
    }

    /** The entry's expiry, epoch ms. */
    public long expiryMs() {
        return expiryMs;
    }

    /** This exception when {@code e} is reschedule.lua's refusal of a due time after the expiry, else {@code e}. */
    static RuntimeException ifRefused(String business, String id, long dueAtMs, RuntimeException e) {
        String message = NestedExceptionUtils.getMostSpecificCause(e).getMessage();
        Matcher refusal = REFUSAL.matcher(message == null ? "" : message);
        return refusal.find()
                ? new RescheduleAfterExpiryException(business, id, dueAtMs, Long.parseLong(refusal.group(1)), e)
                : e;
    }
}
