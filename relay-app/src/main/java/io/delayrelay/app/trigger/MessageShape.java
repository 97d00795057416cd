package io.delayrelay.app.trigger;

import java.util.Locale;

/**
 * What the relay puts on a business's messages besides the body (setting {@code message-shape}). Both shapes are
 * persistent, carry the stable message id and the producer's own headers, and are published with {@code mandatory}
 * (an unroutable message comes back and is dead-lettered, never dropped without a trace).
 */
public enum MessageShape {

    /** Message id, content type and the {@code x-delay-*} headers (business, due-at, relayed-at, shard, attempt, id). */
    FULL,

    /**
     * Message id and the producer's headers only; {@code x-delay-attempt} only on a redelivery (attempt 2 and on),
     * {@code x-delay-id} only for entries scheduled by id. The broker's cost of the relay's own headers is saved.
     */
    LEAN;

    /** The setting's value, as written in configuration. */
    public String value() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The shape a configuration value names (case-insensitive), or null for none. */
    public static MessageShape parse(String value) {
        if (value != null) {
            for (MessageShape shape : values()) {
                if (shape.value().equalsIgnoreCase(value.trim())) {
                    return shape;
                }
            }
        }
        return null;
    }
}
