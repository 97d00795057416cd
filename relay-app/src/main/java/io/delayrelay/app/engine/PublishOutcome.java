package io.delayrelay.app.engine;

/**
 * What the broker said about one published message: a status that decides what happens to the entry, a typed
 * cause (for metrics and decisions) and a human-readable reason (for logs and the dead set).
 */
public record PublishOutcome(Status status, Cause cause, String reason) {

    public enum Status {
        /** Confirmed (ack) and routed. */
        CONFIRMED,
        /** Returned as unroutable (mandatory): no queue is bound for it. Dead-lettered at once. */
        RETURNED,
        /** Cannot be published, ever (e.g. a routing key over 255 bytes): dead-lettered at once. */
        REJECTED,
        /** Nacked, not confirmed in time, or the message could not be built: retried, counted as an attempt. */
        FAILED,
        /** Never reached the broker (no connection): to be retried, not counted as an attempt. */
        NOT_SENT
    }

    /** Why a message was not confirmed; {@link #tag()} is the bounded value metrics use. */
    public enum Cause {
        NONE("none"),
        UNROUTABLE("unroutable"),
        EXCHANGE_NOT_FOUND("exchange-not-found"),
        ACCESS_REFUSED("access-refused"),
        NACK("nack"),
        CONFIRM_TIMEOUT("confirm-timeout"),
        /** The channel closed (connection lost, broker error) before the confirm came. */
        CHANNEL_CLOSED("confirm-failed"),
        /** Writing to the broker failed (no connection). */
        SEND_FAILED("send-failed"),
        /** The trigger's routingKey()/toAmqpMessage() threw. */
        MESSAGE_BUILD_FAILED("message-build-failed"),
        /** The message breaks an AMQP limit (routing key, header frame size). */
        INVALID_MESSAGE("invalid-message"),
        INTERRUPTED("interrupted"),
        OTHER("other");

        private final String tag;

        Cause(String tag) {
            this.tag = tag;
        }

        public String tag() {
            return tag;
        }
    }

    public static final PublishOutcome CONFIRMED = new PublishOutcome(Status.CONFIRMED, Cause.NONE, null);

    public static PublishOutcome returned(String reason) {
        return new PublishOutcome(Status.RETURNED, Cause.UNROUTABLE, reason);
    }

    public static PublishOutcome rejected(Cause cause, String reason) {
        return new PublishOutcome(Status.REJECTED, cause, reason);
    }

    public static PublishOutcome notSent(Cause cause, String reason) {
        return new PublishOutcome(Status.NOT_SENT, cause, reason);
    }

    public static PublishOutcome failed(Cause cause, String reason) {
        return new PublishOutcome(Status.FAILED, cause, reason);
    }

    /**
     * Whether the broker answered this message: confirmed, returned, or refused it itself (nack, no such exchange,
     * access refused). Not sent, not confirmed in time or a channel lost: no answer. A message the relay could not
     * build says nothing of the broker either way.
     */
    public boolean answered() {
        return switch (status) {
            case CONFIRMED, RETURNED -> true;
            case FAILED -> switch (cause) {
                case NACK, EXCHANGE_NOT_FOUND, ACCESS_REFUSED -> true;
                default -> false;
            };
            default -> false;
        };
    }
}
