package io.delayrelay.app.engine.amqp;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import com.rabbitmq.client.AlreadyClosedException;
import io.delayrelay.app.engine.BatchPublisher;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.engine.PublishTracing;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.AmqpException;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.DisposableBean;

/**
 * Publishes batches with publisher confirms and {@code mandatory}, each calling thread (a worker) on its own
 * amqp-client {@link PublishChannel} of the Spring connection factory's connection. A message that cannot be
 * built or published comes back with its own outcome; its batch-mates go out normally.
 */
public class AmqpBatchPublisher implements BatchPublisher, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(AmqpBatchPublisher.class);

    private final ConnectionFactory connectionFactory;
    private final RabbitTemplate template;
    private final AmqpMessageBuilder messages;
    private final Map<Thread, PublishChannel> channels = new ConcurrentHashMap<>();
    /** Fails what a batch still awaits at its publish timeout. */
    private final ConfirmDeadlines deadlines = new ConfirmDeadlines();

    private final RelayEvents events;
    private final PublishTracing tracing;

    public AmqpBatchPublisher(ConnectionFactory connectionFactory, RedisClock clock) {
        this(connectionFactory, clock, RelayEvents.NOOP);
    }

    /** {@code events} hears of messages stamped before their due time ({@link RelayEvents#publishedEarly}). */
    public AmqpBatchPublisher(ConnectionFactory connectionFactory, RedisClock clock, RelayEvents events) {
        this(connectionFactory, clock, events, PublishTracing.NONE);
    }

    /** {@code tracing} observes each publish of a message that carries producer headers (a trace context). */
    public AmqpBatchPublisher(
            ConnectionFactory connectionFactory, RedisClock clock, RelayEvents events, PublishTracing tracing) {
        this(connectionFactory, clock, events, tracing, null);
    }

    /**
     * {@code compression} reads intake messages stored compressed; null where none is (such a message is then
     * dead-lettered as unreadable).
     */
    public AmqpBatchPublisher(
            ConnectionFactory connectionFactory,
            RedisClock clock,
            RelayEvents events,
            PublishTracing tracing,
            EnvelopeCompression compression) {
        this.connectionFactory = connectionFactory;
        this.template = new RabbitTemplate(connectionFactory);
        this.messages = new AmqpMessageBuilder(clock, compression);
        this.events = events;
        this.tracing = tracing;
    }

    /**
     * Publishes every message on the calling thread's channel and returns at once; the future completes on the
     * connection's thread when every message has its outcome (or at the publish timeout).
     */
    @Override
    public CompletableFuture<List<PublishOutcome>> publish(BusinessSpec spec, List<DueMessage> batch) {
        PendingBatch pending = new PendingBatch(batch.size());
        long timeoutMs = spec.timing().publishTimeout().toMillis();
        PublishChannel channel = null;
        int early = 0;
        PublishTracing.PublishSpan[] spans = null;
        // the batch's frames go out together when the loop ends (one socket write per 64 KB), not one per message
        CoalescingSocketFactory.Wave wave = CoalescingSocketFactory.wave();
        try {
            for (int i = 0; i < batch.size(); i++) {
                DueMessage message = batch.get(i);
                AmqpMessageBuilder.Built built;
                try {
                    built = messages.build(spec, message);
                } catch (AmqpMessageBuilder.InvalidMessageException e) {
                    pending.complete(
                            i,
                            PublishOutcome.rejected(
                                    PublishOutcome.Cause.INVALID_MESSAGE, "cannot be published: " + e.getMessage()));
                    continue;
                } catch (RuntimeException e) {
                    pending.complete(
                            i,
                            PublishOutcome.failed(
                                    PublishOutcome.Cause.MESSAGE_BUILD_FAILED,
                                    "building the message failed: " + Exceptions.rootMessage(e)));
                    continue;
                }
                if (built.early(message)) {
                    early++;
                }
                if (tracing != PublishTracing.NONE && !message.headers().isEmpty()) {
                    PublishTracing.PublishSpan span = startSpan(spec, message, built.routingKey());
                    if (span != null) {
                        spans = spans == null ? new PublishTracing.PublishSpan[batch.size()] : spans;
                        spans[i] = span;
                    }
                }
                PublishOutcome closed = channel == null ? null : channel.closedOutcome();
                if (closed != null && closed.cause() != PublishOutcome.Cause.CHANNEL_CLOSED) {
                    // The broker closed the channel over this batch (missing exchange, refused write): a new channel
                    // would fare no better, so the rest of the batch shares that outcome.
                    for (int j = i; j < batch.size(); j++) {
                        pending.complete(j, closed);
                    }
                    break;
                }
                try {
                    if (channel == null || !channel.usable()) {
                        channel = channel(timeoutMs);
                    }
                    channel.publish(
                            built.exchangeOr(spec.route().exchange()),
                            built.routingKey(),
                            built.properties(),
                            built.body(),
                            pending,
                            i,
                            wave);
                } catch (IllegalArgumentException e) {
                    // amqp-client refused this message before writing a frame (e.g. headers over the frame size):
                    // it never will take it; the channel retired itself if its numbering moved.
                    pending.complete(
                            i,
                            PublishOutcome.rejected(
                                    PublishOutcome.Cause.INVALID_MESSAGE,
                                    "cannot be published: " + Exceptions.rootMessage(e)));
                } catch (IOException | AlreadyClosedException | AmqpException e) {
                    PublishOutcome closedNow = channel == null ? null : channel.closedOutcome();
                    PublishOutcome rest = closedNow != null && closedNow.cause() != PublishOutcome.Cause.CHANNEL_CLOSED
                            ? closedNow
                            : PublishOutcome.notSent(
                                    PublishOutcome.Cause.SEND_FAILED, "send failed: " + Exceptions.rootMessage(e));
                    for (int j = i; j < batch.size(); j++) {
                        pending.complete(j, rest);
                    }
                    break;
                }
            }
        } finally {
            wave.close();
        }
        if (early > 0) {
            reportEarly(spec, batch.get(0).shard(), early);
        }
        if (spans != null) {
            endSpans(spec, spans, pending);
        }
        if (!pending.isDone()) {
            deadlines.watch(pending, timeoutMs, channel);
        }
        return pending.future();
    }

    private PublishTracing.PublishSpan startSpan(BusinessSpec spec, DueMessage message, String routingKey) {
        try {
            return tracing.start(spec, message, routingKey);
        } catch (RuntimeException e) {
            log.debug("business={} shard={}: starting the publish span failed", spec.name(), message.shard(), e);
            return null;
        }
    }

    /** Ends each message's span with its own outcome once the batch has them all. */
    private static void endSpans(BusinessSpec spec, PublishTracing.PublishSpan[] spans, PendingBatch pending) {
        pending.future().whenComplete((outcomes, error) -> {
            for (int i = 0; i < spans.length; i++) {
                if (spans[i] == null) {
                    continue;
                }
                PublishOutcome outcome = outcomes != null && i < outcomes.size() && outcomes.get(i) != null
                        ? outcomes.get(i)
                        : PublishOutcome.failed(PublishOutcome.Cause.CONFIRM_TIMEOUT, String.valueOf(error));
                try {
                    spans[i].end(outcome);
                } catch (RuntimeException e) {
                    log.debug("business={}: ending a publish span failed", spec.name(), e);
                }
            }
        });
    }

    /** Never expected; logged and counted so that it cannot pass unseen. The listener's failure stays here. */
    private void reportEarly(BusinessSpec spec, int shard, int count) {
        log.error(
                "business={} shard={}: {} message(s) stamped x-delay-relayed-at before their due time (Redis time)",
                spec.name(),
                shard,
                count);
        try {
            events.publishedEarly(spec, shard, count);
        } catch (RuntimeException e) {
            log.debug("business={}: relay event listener failed", spec.name(), e);
        }
    }

    /** The calling thread's channel, opened on first use and after it closed. */
    private PublishChannel channel(long retireTimeoutMs) throws IOException {
        Thread thread = Thread.currentThread();
        PublishChannel current = channels.get(thread);
        if (current != null && current.usable()) {
            return current;
        }
        PublishChannel fresh =
                PublishChannel.open(connectionFactory.createConnection().getDelegate(), retireTimeoutMs);
        channels.put(thread, fresh);
        if (current != null) {
            current.close();
        }
        channels.entrySet().removeIf(e -> {
            if (!e.getKey().isAlive()) {
                e.getValue().close();
                return true;
            }
            return false;
        });
        return fresh;
    }

    @Override
    public void prepareExchange(BusinessSpec spec) {
        template.execute(channel -> {
            if (spec.route().declare()) {
                channel.exchangeDeclare(spec.route().exchange(), spec.route().type(), true);
            } else {
                channel.exchangeDeclarePassive(spec.route().exchange());
            }
            return null;
        });
    }

    @Override
    public void destroy() {
        deadlines.close();
        channels.values().forEach(PublishChannel::close);
        channels.clear();
        log.debug("publish channels closed");
    }
}
