package io.delayrelay.app.trigger;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;

/** How a due entry becomes an AMQP message: its routing key and the message itself. */
public interface OutgoingMessages {

    /** The default: the configured routing key and the entry's bytes as the body, unchanged. */
    OutgoingMessages DEFAULT = new OutgoingMessages() {};

    /** The routing key for this message; {@code configured} is the business's routing key. */
    default String routingKey(DueMessage message, String configured) {
        return configured;
    }

    /**
     * The AMQP message to publish. {@code properties} already carries the relay's headers, message id and
     * persistent delivery mode; keep them so consumers can deduplicate.
     */
    default Message toAmqpMessage(DueMessage message, MessageProperties properties) {
        return new Message(message.body(), properties);
    }
}
