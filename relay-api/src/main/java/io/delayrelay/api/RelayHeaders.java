package io.delayrelay.api;

/**
 * AMQP header names the relay sets on the messages it publishes: all of them with the business's default
 * {@code message-shape: full}; with {@code lean} only {@link #ATTEMPT} on a redelivery and {@link #ID}. The AMQP
 * message id is stable across redeliveries of the same scheduled entry (in both shapes), so consumers can deduplicate
 * on it.
 */
public final class RelayHeaders {

    /** The business name (String). */
    public static final String BUSINESS = "x-delay-business";
    /** The due time, epoch milliseconds (Long). */
    public static final String DUE_AT = "x-delay-due-at";
    /** When the relay popped the entry, Redis server time in epoch milliseconds (Long). */
    public static final String RELAYED_AT = "x-delay-relayed-at";
    /** The shard index the entry came from (Integer). */
    public static final String SHARD = "x-delay-shard";
    /** Delivery attempt, 1 for the first delivery (Integer). */
    public static final String ATTEMPT = "x-delay-attempt";
    /** The id, for entries scheduled by id (String); absent otherwise. */
    public static final String ID = "x-delay-id";
    /** The recurring schedule that fired the message (String); absent on other messages. In both shapes. */
    public static final String SCHEDULE = "x-delay-schedule";
    /**
     * The slot of a recurring schedule the message fired for, epoch milliseconds (Long); {@link #DUE_AT} is the same
     * for an on-time fire. Absent on other messages. In both shapes.
     */
    public static final String SLOT = "x-delay-slot";

    private RelayHeaders() {}
}
