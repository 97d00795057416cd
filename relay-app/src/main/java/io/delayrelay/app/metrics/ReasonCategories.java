package io.delayrelay.app.metrics;

import java.util.List;

/** Maps the engine's free-text reasons to the short, bounded tag values metrics need. */
final class ReasonCategories {

    static final String UNROUTABLE = "unroutable";
    static final String LEASE_EXPIRED = "lease-expired";
    static final String MAX_ATTEMPTS = "max-attempts";
    /** Every value of the dead-lettered counter's reason tag. */
    static final List<String> DEAD_REASONS = List.of(UNROUTABLE, LEASE_EXPIRED, MAX_ATTEMPTS);
    /** Every value of the publish-failures counter's cause tag. */
    static final List<String> PUBLISH_CAUSES = List.of("exchange-not-found", "nack", "confirm-timeout",
            "confirm-failed", "send-failed", "interrupted", "other");

    private ReasonCategories() {
    }

    /** Why an entry went to the dead set: unroutable, lease-expired or max-attempts (every other failure). */
    static String deadReason(String reason) {
        String r = reason == null ? "" : reason.toLowerCase(java.util.Locale.ROOT);
        if (r.startsWith("unroutable")) {
            return UNROUTABLE;
        }
        if (r.startsWith("lease expired")) {
            return LEASE_EXPIRED;
        }
        return MAX_ATTEMPTS;
    }

    /** Why a publish failed: exchange-not-found, nack, confirm-timeout, confirm-failed, send-failed, interrupted, other. */
    static String publishCause(String cause) {
        String c = cause == null ? "" : cause.toLowerCase(java.util.Locale.ROOT);
        if (c.contains("not_found") || c.contains("does not exist")) {
            return "exchange-not-found";
        }
        if (c.startsWith("nack")) {
            return "nack";
        }
        if (c.startsWith("confirm timeout")) {
            return "confirm-timeout";
        }
        if (c.startsWith("confirm failed")) {
            return "confirm-failed";
        }
        if (c.startsWith("send failed") || c.startsWith("not sent")) {
            return "send-failed";
        }
        if (c.startsWith("interrupted")) {
            return "interrupted";
        }
        return "other";
    }
}
