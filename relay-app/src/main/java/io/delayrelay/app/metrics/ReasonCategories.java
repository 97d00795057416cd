package io.delayrelay.app.metrics;

/** Maps the engine's free-text reasons to the short, bounded tag values metrics need. */
final class ReasonCategories {

    static final String UNROUTABLE = "unroutable";
    static final String LEASE_EXPIRED = "lease-expired";
    static final String MAX_ATTEMPTS = "max-attempts";

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
