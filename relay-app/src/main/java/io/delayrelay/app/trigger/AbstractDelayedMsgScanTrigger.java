package io.delayrelay.app.trigger;

/**
 * Subclass this as a Spring bean to relay one business with code: name it, and optionally set its source key,
 * thread count, exchange and routing key, or change how a message becomes an AMQP message.
 *
 * <p>Every value left {@code null} comes from configuration ({@code relay.defaults.*}); values set in
 * {@code relay.businesses.<business>.*} win over the ones returned here, so operators can tune and hot-reload a
 * coded business like a declared one.
 *
 * <pre>{@code
 * @Component
 * class OrderTimeoutTrigger extends AbstractDelayedMsgScanTrigger {
 *     public String getBusiness()   { return "order-timeout"; }
 *     public String getExchange()   { return "order.events"; }
 *     public String getRoutingKey() { return "order.timeout"; }
 * }
 * }</pre>
 */
public abstract class AbstractDelayedMsgScanTrigger implements OutgoingMessages {

    /** The business name: lowercase letters, digits and '-', as used under {@code relay.businesses}. */
    public abstract String getBusiness();

    /** The source key {@code K}; {@code null} for configuration or the default {@code delayqueue:<business>}. */
    public String getSourceKey() {
        return null;
    }

    /** Worker threads; {@code null} for configuration. */
    public Integer getThreadNum() {
        return null;
    }

    /** Worker thread name prefix; {@code null} for configuration or {@code relay-<business>-}. */
    public String getThreadNamePrefix() {
        return null;
    }

    /** Target exchange; {@code null} for configuration. */
    public String getExchange() {
        return null;
    }

    /** Routing key; {@code null} for configuration. */
    public String getRoutingKey() {
        return null;
    }

    /** Shard count; {@code null} for configuration. */
    public Integer getShards() {
        return null;
    }
}
