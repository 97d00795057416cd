package io.delayrelay.app.engine;

/** Why entries went to the dead set; {@link #tag()} is the bounded value metrics use. */
public enum DeadReason {
    /** Returned by the broker: no queue is bound for the routing key. */
    UNROUTABLE("unroutable"),
    /** Breaks an AMQP limit (routing key, header size): it could never be published. */
    INVALID_MESSAGE("invalid-message"),
    /** Its lease expired unconfirmed max-attempts times. */
    LEASE_EXPIRED("lease-expired"),
    /** Its publish failed max-attempts times. */
    MAX_ATTEMPTS("max-attempts"),
    /** Popped past the business's max-lateness or its own expiry (the late policy): never published. */
    EXPIRED("expired");

    private final String tag;

    DeadReason(String tag) {
        this.tag = tag;
    }

    public String tag() {
        return tag;
    }
}
