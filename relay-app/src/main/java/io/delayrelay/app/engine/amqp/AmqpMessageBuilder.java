package io.delayrelay.app.engine.amqp;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import com.rabbitmq.client.AMQP;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.delayrelay.app.trigger.MessageShape;
import io.delayrelay.app.trigger.OutgoingMessages;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter;
import org.springframework.amqp.rabbit.support.MessagePropertiesConverter;

/**
 * Turns a due entry into what {@code basicPublish} takes: routing key, properties (persistent, stable message id,
 * the relay's headers as the business's {@link MessageShape} says) and body. Businesses that keep the default message shape get amqp-client properties built
 * directly; a trigger that overrides {@link OutgoingMessages#toAmqpMessage} gets Spring's message, converted.
 */
final class AmqpMessageBuilder {

    /** AMQP's short-string limit, which a routing key must fit. */
    static final int MAX_ROUTING_KEY_BYTES = 255;

    private static final int PERSISTENT = 2;

    /** The relay's own headers: a producer's header of one of these names is never published as its own. */
    private static final Set<String> RELAY_OWN = Set.of(
            RelayHeaders.SCHEDULE,
            RelayHeaders.SLOT,
            RelayHeaders.BUSINESS,
            RelayHeaders.DUE_AT,
            RelayHeaders.RELAYED_AT,
            RelayHeaders.SHARD,
            RelayHeaders.ATTEMPT,
            RelayHeaders.ID);

    /** A message that can never be published as it is (breaks an AMQP limit): dead-lettered at once. */
    static final class InvalidMessageException extends RuntimeException {
        InvalidMessageException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * A message ready to publish; {@code relayedAtMs} is its {@code x-delay-relayed-at} stamp. {@code exchange} is
     * null for the business's own exchange, or the one an intake message is delivered to.
     */
    record Built(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body, long relayedAtMs) {

        Built(String routingKey, AMQP.BasicProperties properties, byte[] body, long relayedAtMs) {
            this(null, routingKey, properties, body, relayedAtMs);
        }

        /** The exchange to publish to. */
        String exchangeOr(String business) {
            return exchange == null ? business : exchange;
        }

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
    private final EnvelopeCompression compression;

    AmqpMessageBuilder(RedisClock clock) {
        this(clock, null);
    }

    /** {@code compression}: reads intake envelopes stored compressed (null: none can be read). */
    AmqpMessageBuilder(RedisClock clock, EnvelopeCompression compression) {
        this.clock = clock;
        this.compression = compression;
    }

    /**
     * Builds the message. Throws {@link InvalidMessageException} when it breaks an AMQP limit, and whatever the
     * trigger's code throws.
     */
    Built build(BusinessSpec spec, DueMessage message) {
        if (message.byId()
                && (IntakeEnvelope.isEnvelope(message.body()) || EnvelopeCompression.isCompressed(message.body()))) {
            return intake(spec, message);
        }
        OutgoingMessages outgoing = spec.outgoing();
        String routingKey = outgoing.routingKey(message, spec.route().routingKey());
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
        boolean lean = spec.messageShape() == MessageShape.LEAN;
        if (DEFAULT_SHAPE.get(outgoing.getClass())) {
            AMQP.BasicProperties properties = lean ? leanProperties(message) : properties(message, relayedAt);
            return new Built(routingKey, properties, message.body(), relayedAt);
        }
        Message amqp = outgoing.toAmqpMessage(message, springProperties(message, relayedAt, lean));
        if (amqp == null) {
            throw new InvalidMessageException("toAmqpMessage returned null");
        }
        return new Built(
                routingKey,
                converter.fromMessageProperties(amqp.getMessageProperties(), StandardCharsets.UTF_8.name()),
                amqp.getBody(),
                relayedAt);
    }

    /**
     * A message an AMQP intake took in: published to its deliver-to exchange with the routing key and every property
     * it came with; the relay's headers are added as the business's message shape says.
     */
    private Built intake(BusinessSpec spec, DueMessage message) {
        IntakeEnvelope.Message kept;
        try {
            byte[] envelope = message.body();
            if (EnvelopeCompression.isCompressed(envelope)) {
                if (compression == null) {
                    throw new IllegalArgumentException("stored compressed, and this publisher reads no dictionaries");
                }
                envelope = compression.expand(spec.keys(), envelope);
            }
            kept = IntakeEnvelope.decode(envelope);
        } catch (IllegalArgumentException e) {
            throw new InvalidMessageException("unreadable intake envelope: " + e.getMessage());
        }
        long relayedAt = Math.max(clock.nowMs(), message.poppedAtMs());
        AMQP.BasicProperties p = kept.properties();
        Map<String, Object> headers = new HashMap<>(p.getHeaders() == null ? Map.of() : p.getHeaders());
        headers.keySet().removeAll(RELAY_OWN);
        boolean lean = spec.messageShape() == MessageShape.LEAN;
        if (!lean) {
            headers.put(RelayHeaders.BUSINESS, message.business());
            headers.put(RelayHeaders.DUE_AT, message.dueAtMs());
            headers.put(RelayHeaders.RELAYED_AT, relayedAt);
            headers.put(RelayHeaders.SHARD, message.shard());
        }
        if (!lean || message.attempt() > 1) {
            headers.put(RelayHeaders.ATTEMPT, message.attempt());
        }
        headers.put(RelayHeaders.ID, message.id());
        AMQP.BasicProperties properties = p.builder()
                .messageId(
                        kept.idIsMessageId()
                                ? message.id()
                                : p.getMessageId() != null ? p.getMessageId() : message.messageId())
                .headers(headers)
                .build();
        return new Built(kept.exchange(), kept.routingKey(), properties, kept.body(), relayedAt);
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
        putSlot(headers, message);
        return new AMQP.BasicProperties.Builder()
                .contentType(MessageProperties.CONTENT_TYPE_BYTES)
                .deliveryMode(PERSISTENT)
                .priority(0)
                .messageId(message.messageId())
                .headers(headers)
                .build();
    }

    /**
     * The lean shape: persistent, the stable message id, the producer's headers; of the relay's own headers only
     * the attempt of a redelivery and the id of an entry scheduled by id. No content type, no priority, and no
     * header table at all when nothing goes in it.
     */
    private static AMQP.BasicProperties leanProperties(DueMessage message) {
        Map<String, Object> headers = null;
        if (!message.headers().isEmpty() || message.attempt() > 1 || message.byId() || message.slot() != null) {
            headers = new HashMap<>(4 + message.headers().size());
            headers.putAll(message.headers());
            // the relay's own after the producer's, so none can be overwritten; and no forged one stays
            headers.keySet().removeAll(RELAY_OWN);
            if (message.attempt() > 1) {
                headers.put(RelayHeaders.ATTEMPT, message.attempt());
            }
            if (message.byId()) {
                headers.put(RelayHeaders.ID, message.id());
            }
            putSlot(headers, message);
        }
        return new AMQP.BasicProperties.Builder()
                .deliveryMode(PERSISTENT)
                .messageId(message.messageId())
                .headers(headers)
                .build();
    }

    private static MessageProperties springProperties(DueMessage message, long relayedAt, boolean lean) {
        MessageProperties properties = new MessageProperties();
        properties.setDeliveryMode(MessageDeliveryMode.PERSISTENT);
        properties.setMessageId(message.messageId());
        properties.setContentType(MessageProperties.CONTENT_TYPE_BYTES);
        message.headers().forEach(properties::setHeader);
        if (lean) {
            // what the lean shape carries; the trigger's own code may add more
            properties.getHeaders().keySet().removeAll(RELAY_OWN);
            if (message.attempt() > 1) {
                properties.setHeader(RelayHeaders.ATTEMPT, message.attempt());
            }
            if (message.byId()) {
                properties.setHeader(RelayHeaders.ID, message.id());
            }
            putSlot(properties.getHeaders(), message);
            return properties;
        }
        properties.setHeader(RelayHeaders.BUSINESS, message.business());
        properties.setHeader(RelayHeaders.DUE_AT, message.dueAtMs());
        properties.setHeader(RelayHeaders.RELAYED_AT, relayedAt);
        properties.setHeader(RelayHeaders.SHARD, message.shard());
        properties.setHeader(RelayHeaders.ATTEMPT, message.attempt());
        if (message.byId()) {
            properties.setHeader(RelayHeaders.ID, message.id());
        }
        putSlot(properties.getHeaders(), message);
        return properties;
    }

    /** A recurring schedule's message carries its schedule and slot, in both shapes. */
    private static void putSlot(Map<String, Object> headers, DueMessage message) {
        if (message.slot() != null) {
            headers.put(RelayHeaders.SCHEDULE, message.slot().schedule());
            headers.put(RelayHeaders.SLOT, message.slot().slotMs());
        }
    }
}
