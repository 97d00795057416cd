package io.delayrelay.app.intake;

import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.app.config.IntakeSettings;
import io.delayrelay.app.engine.amqp.IntakeEnvelope;
import io.delayrelay.app.support.Exceptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes one intake's messages in: each is written to its business's shards by id, then acknowledged. A message that
 * cannot be scheduled goes to the business's dead set with its reason, then is acknowledged. When Redis fails, the
 * message is handed back to the broker (after a pause) and comes again: nothing is acknowledged unwritten.
 */
final class IntakeConsumer extends DefaultConsumer {

    private static final Logger log = LoggerFactory.getLogger(IntakeConsumer.class);

    /** How long a failed write waits before its message is handed back to the broker. */
    static final Duration RETRY_PAUSE = Duration.ofSeconds(1);

    /** How a message leaves the intake. */
    enum Outcome {
        SCHEDULED,
        DEAD
    }

    /** Where the consumer writes: the relay's Redis, through the producer contract. */
    interface Writer {
        /** Schedules by id {@code ms} after Redis time. */
        void scheduleAfter(String business, String id, byte[] payload, long ms);

        /** Schedules by id at epoch ms {@code at}. */
        void scheduleAt(String business, String id, byte[] payload, long at);

        /** Keeps the message as a dead letter; false when the id is taken by a scheduled entry. */
        boolean dead(String business, String id, byte[] payload, String reason);

        /** Redis time, epoch ms. */
        long nowMs();

        /** Most bytes the business pops in one call, or -1 when unknown. */
        long batchBytes(String business);
    }

    /** What the consumer reports. */
    interface Listener {
        void received(String intake, Outcome outcome, String reason);

        void failed(String intake, String reason, Throwable error);
    }

    private final String name;
    private final IntakeSettings settings;
    private final Writer writer;
    private final Listener listener;

    IntakeConsumer(Channel channel, String name, IntakeSettings settings, Writer writer, Listener listener) {
        super(channel);
        this.name = name;
        this.settings = settings;
        this.writer = writer;
        this.listener = listener;
    }

    @Override
    public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
            throws IOException {
        long deliveryTag = envelope.getDeliveryTag();
        String business = settings.businessOf(name);
        try {
            Outcome outcome = take(business, envelope.getRoutingKey(), properties, body);
            getChannel().basicAck(deliveryTag, false);
            listener.received(name, outcome, null);
        } catch (RuntimeException e) {
            listener.failed(name, "write failed", e);
            log.warn(
                    "intake={} business={}: writing a message to Redis failed, handing it back to RabbitMQ in {} ms: {}",
                    name,
                    business,
                    RETRY_PAUSE.toMillis(),
                    Exceptions.rootMessage(e));
            pause();
            getChannel().basicNack(deliveryTag, false, true);
        }
    }

    private Outcome take(String business, String routingKey, AMQP.BasicProperties properties, byte[] body) {
        Map<String, Object> headers = properties.getHeaders();
        DelayHeaders.Due due = DelayHeaders.of(headers);
        String messageId = properties.getMessageId();
        String id = messageId == null || messageId.isBlank() ? UUID.randomUUID().toString() : messageId;
        AMQP.BasicProperties kept = properties;
        if (headers != null && headers.containsKey(DelayHeaders.DELAY)) {
            Map<String, Object> rest = new HashMap<>(headers);
            rest.remove(DelayHeaders.DELAY);
            kept = kept.builder().headers(rest.isEmpty() ? null : rest).build();
        }
        if (kept.getUserId() != null) {
            // RabbitMQ refuses a user-id other than the publishing connection's: the relay publishes as itself
            kept = kept.builder().userId(null).build();
        }
        byte[] payload = IntakeEnvelope.encode(settings.getDeliverTo(), routingKey, kept, body);
        String bad = problem(business, due, payload);
        if (bad != null) {
            dead(business, id, payload, bad);
            return Outcome.DEAD;
        }
        if (due instanceof DelayHeaders.At at) {
            writer.scheduleAt(business, id, payload, at.at());
        } else {
            writer.scheduleAfter(business, id, payload, ((DelayHeaders.After) due).ms());
        }
        return Outcome.SCHEDULED;
    }

    /** Why the message cannot be scheduled, or null. */
    private String problem(String business, DelayHeaders.Due due, byte[] payload) {
        if (due instanceof DelayHeaders.Bad bad) {
            return bad.reason();
        }
        long limit = writer.batchBytes(business);
        if (limit > 0 && payload.length > limit) {
            return "message of " + payload.length + " bytes (properties included) exceeds the business's batch-bytes "
                    + limit;
        }
        Duration max = settings.getMaxDelay();
        if (max != null) {
            long delay = due instanceof DelayHeaders.At at ? at.at() - writer.nowMs() : ((DelayHeaders.After) due).ms();
            if (delay > max.toMillis()) {
                return "due in " + delay + " ms, beyond the intake's max-delay " + max;
            }
        }
        return null;
    }

    private void dead(String business, String id, byte[] payload, String reason) {
        String why = "intake " + name + ": " + reason;
        if (!writer.dead(business, id, payload, why)) {
            // the message id names a scheduled entry: the bad message must not replace its payload
            writer.dead(business, id + ":rejected:" + UUID.randomUUID(), payload, why);
        }
        log.warn("intake={} business={}: message id={} dead-lettered: {}", name, business, id, reason);
    }

    private static void pause() {
        try {
            Thread.sleep(RETRY_PAUSE.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
