package io.delayrelay.app.engine.amqp;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import com.rabbitmq.client.AMQP;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.delayrelay.app.trigger.OutgoingMessages;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter;
import org.springframework.amqp.rabbit.support.MessagePropertiesConverter;

/**
 * Turns a due entry into what {@code basicPublish} takes: routing key, properties (persistent, stable message id,
 * the relay's headers) and body. Businesses that keep the default message shape get amqp-client properties built
 * directly; a trigger that overrides {@link OutgoingMessages#toAmqpMessage} gets Spring's message, converted.
 */
final class AmqpMessageBuilder {

    /** AMQP's short-string limit, which a routing key must fit. */
    static final int MAX_ROUTING_KEY_BYTES = 255;

    private static final int PERSISTENT = 2;

    /** A message that can never be published as it is (breaks an AMQP limit): dead-lettered at once. */
    static final class InvalidMessageException extends RuntimeException {
        InvalidMessageException(String message) {
            super(message, null, false, false);
        }
    }

    /** A message ready to publish; {@code relayedAtMs} is its {@code x-delay-relayed-at} stamp. */
    record Built(String routingKey, AMQP.BasicProperties properties, byte[] body, long relayedAtMs) {

        /** Whether the stamp says it leaves before it is due (never expected: counted as early). */
        boolean early(DueMessage message) {
            return relayedAtMs < message.dueAtMs();
        }
    }

    private static final ClassValue<Boolean> DEFAULT_SHAPE = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            try {
                return type.getMethod("toAmqpMessage", DueMessage.class, MessageProperties.class)
                                .getDeclaringClass()
                        == OutgoingMessages.class;
            } catch (NoSuchMethodException e) {
                return false;
            }
        }
    };

    private final MessagePropertiesConverter converter = new DefaultMessagePropertiesConverter();
    private final RedisClock clock;

    AmqpMessageBuilder(RedisClock clock) {
        this.clock = clock;
    }

    /**
     * Builds the message. Throws {@link InvalidMessageException} when it breaks an AMQP limit, and whatever the
     * trigger's code throws.
     */
    Built build(BusinessSpec spec, DueMessage message) {
        OutgoingMessages outgoing = spec.outgoing();
        String routingKey = outgoing.routingKey(message, spec.routingKey());
        if (routingKey == null) {
            throw new InvalidMessageException("routing key is null");
        }
        // a char takes at most 3 UTF-8 bytes: only a long key needs encoding to be checked
        int routingKeyBytes = routingKey.length() * 3 <= MAX_ROUTING_KEY_BYTES
                ? routingKey.length()
                : routingKey.getBytes(StandardCharsets.UTF_8).length;
        if (routingKeyBytes > MAX_ROUTING_KEY_BYTES) {
            throw new InvalidMessageException("routing key of " + routingKeyBytes + " bytes exceeds AMQP's "
                    + MAX_ROUTING_KEY_BYTES + " (starts '" + routingKey.substring(0, 32) + "')");
        }
        // never before the pop's own Redis TIME: the estimate trails Redis time by the reply's way back
        long relayedAt = Math.max(clock.nowMs(), message.poppedAtMs());
        if (DEFAULT_SHAPE.get(outgoing.getClass())) {
            return new Built(routingKey, properties(message, relayedAt), message.body(), relayedAt);
        }
        Message amqp = outgoing.toAmqpMessage(message, springProperties(message, relayedAt));
        if (amqp == null) {
            throw new InvalidMessageException("toAmqpMessage returned null");
        }
        return new Built(
                routingKey,
                converter.fromMessageProperties(amqp.getMessageProperties(), StandardCharsets.UTF_8.name()),
                amqp.getBody(),
                relayedAt);
    }

    private static AMQP.BasicProperties properties(DueMessage message, long relayedAt) {
        Map<String, Object> headers = new HashMap<>(8 + message.headers().size());
        // the producer's headers first: the relay's own are put after them, so none can be overwritten
        headers.putAll(message.headers());
        headers.put(RelayHeaders.BUSINESS, message.business());
        headers.put(RelayHeaders.DUE_AT, message.dueAtMs());
        headers.put(RelayHeaders.RELAYED_AT, relayedAt);
        headers.put(RelayHeaders.SHARD, message.shard());
        headers.put(RelayHeaders.ATTEMPT, message.attempt());
        if (message.byId()) {
            headers.put(RelayHeaders.ID, message.id());
        }
        return new AMQP.BasicProperties.Builder()
                .contentType(MessageProperties.CONTENT_TYPE_BYTES)
                .deliveryMode(PERSISTENT)
                .priority(0)
                .messageId(message.messageId())
                .headers(headers)
                .build();
    }

    private static MessageProperties springProperties(DueMessage message, long relayedAt) {
        MessageProperties properties = new MessageProperties();
        properties.setDeliveryMode(MessageDeliveryMode.PERSISTENT);
        properties.setMessageId(message.messageId());
        properties.setContentType(MessageProperties.CONTENT_TYPE_BYTES);
        message.headers().forEach(properties::setHeader);
        properties.setHeader(RelayHeaders.BUSINESS, message.business());
        properties.setHeader(RelayHeaders.DUE_AT, message.dueAtMs());
        properties.setHeader(RelayHeaders.RELAYED_AT, relayedAt);
        properties.setHeader(RelayHeaders.SHARD, message.shard());
        properties.setHeader(RelayHeaders.ATTEMPT, message.attempt());
        if (message.byId()) {
            properties.setHeader(RelayHeaders.ID, message.id());
        }
        return properties;
    }
}
