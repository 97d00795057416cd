package io.delayrelay.app.engine;

/** What the broker said about one published message. */
public record PublishOutcome(Status status, String reason) {

    public enum Status {
        /** Confirmed (ack) and routed. */
        CONFIRMED,
        /** Returned as unroutable (mandatory): no queue is bound for it. */
        RETURNED,
        /** Nacked or not confirmed in time: to be retried, counted as a failed attempt. */
        FAILED,
        /** Never reached the broker (no connection): to be retried, not counted as an attempt. */
        NOT_SENT
    }

    public static final PublishOutcome CONFIRMED = new PublishOutcome(Status.CONFIRMED, null);

    public static PublishOutcome returned(String reason) {
        return new PublishOutcome(Status.RETURNED, reason);
    }

    public static PublishOutcome notSent(String reason) {
        return new PublishOutcome(Status.NOT_SENT, reason);
    }

    public static PublishOutcome failed(String reason) {
        return new PublishOutcome(Status.FAILED, reason);
    }
}
