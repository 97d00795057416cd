package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.ReturnedMessage;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.connection.CorrelationData;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/**
 * Publishes a batch on one channel with publisher confirms and {@code mandatory}, then waits for every confirm.
 * Requires a connection factory with correlated publisher confirms and publisher returns.
 */
public class AmqpBatchPublisher implements BatchPublisher {

    private final RabbitTemplate template;
    private volatile ChannelError lastChannelError;
    /** Correlation ids only need to be unique among this publisher's pending confirms: a counter, no randomness. */
    private final String correlationPrefix = UUID.randomUUID() + "-";
    private final java.util.concurrent.atomic.AtomicLong correlations = new java.util.concurrent.atomic.AtomicLong();
    private final RedisClock clock;

    public AmqpBatchPublisher(ConnectionFactory connectionFactory, RedisClock clock) {
        requireConfirmsAndReturns(connectionFactory);
        if (connectionFactory instanceof org.springframework.amqp.rabbit.connection.AbstractConnectionFactory factory) {
            factory.addChannelListener(new org.springframework.amqp.rabbit.connection.ChannelListener() {
                @Override
                public void onCreate(com.rabbitmq.client.Channel channel, boolean transactional) {
                }

                @Override
                public void onShutDown(com.rabbitmq.client.ShutdownSignalException signal) {
                    if (!signal.isInitiatedByApplication()) {
                        lastChannelError = new ChannelError(signal.getMessage(), System.nanoTime());
                    }
                }
            });
        }
        this.template = new RabbitTemplate(connectionFactory);
        this.template.setMandatory(true);
        this.clock = clock;
    }

    static void requireConfirmsAndReturns(ConnectionFactory connectionFactory) {
        if (!connectionFactory.isPublisherConfirms()) {
            throw new IllegalStateException("delay-relay needs correlated publisher confirms: set "
                    + "spring.rabbitmq.publisher-confirm-type=correlated");
        }
        if (!connectionFactory.isPublisherReturns()) {
            throw new IllegalStateException("delay-relay needs publisher returns to detect unroutable messages: "
                    + "set spring.rabbitmq.publisher-returns=true");
        }
    }

    @Override
    public List<PublishOutcome> publish(BusinessSpec spec, List<DueMessage> batch) {
        return publishAsync(spec, batch, java.util.concurrent.ForkJoinPool.commonPool()).join();
    }

    @Override
    public CompletableFuture<List<PublishOutcome>> publishAsync(BusinessSpec spec, List<DueMessage> batch,
            Executor executor) {
        List<CorrelationData> sent = new ArrayList<>(batch.size());
        String sendFailure = null;
        try {
            template.invoke(ops -> {
                for (DueMessage message : batch) {
                    Message amqp = spec.outgoing().toAmqpMessage(message, properties(message));
                    String routingKey = spec.outgoing().routingKey(message, spec.routingKey());
                    CorrelationData correlation = new CorrelationData(correlationPrefix + correlations.incrementAndGet());
                    ops.send(spec.exchange(), routingKey, amqp, correlation);
                    sent.add(correlation);
                }
                return null;
            });
        } catch (RuntimeException e) {
            sendFailure = "send failed: " + rootMessage(e);
        }
        String notSent = sendFailure != null ? sendFailure : "not sent";
        if (sent.isEmpty()) {
            List<PublishOutcome> none = new ArrayList<>(batch.size());
            batch.forEach(m -> none.add(PublishOutcome.notSent(notSent)));
            return CompletableFuture.completedFuture(none);
        }
        CompletableFuture<?>[] confirms = sent.stream().map(CorrelationData::getFuture).toArray(CompletableFuture[]::new);
        return CompletableFuture.allOf(confirms)
                .completeOnTimeout(null, spec.publishTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .handleAsync((ignored, error) -> outcomes(spec, batch.size(), sent, notSent), executor);
    }

    private List<PublishOutcome> outcomes(BusinessSpec spec, int size, List<CorrelationData> sent, String notSent) {
        List<PublishOutcome> outcomes = new ArrayList<>(size);
        boolean anyFailed = false;
        for (int i = 0; i < size; i++) {
            PublishOutcome outcome = i < sent.size() ? outcome(sent.get(i)) : PublishOutcome.notSent(notSent);
            anyFailed |= outcome.status() == PublishOutcome.Status.FAILED;
            outcomes.add(outcome);
        }
        return anyFailed ? explainFailures(spec, outcomes) : outcomes;
    }

    private static PublishOutcome outcome(CorrelationData correlation) {
        CompletableFuture<CorrelationData.Confirm> future = correlation.getFuture();
        if (!future.isDone()) {
            return PublishOutcome.failed("confirm timeout");
        }
        CorrelationData.Confirm confirm;
        try {
            confirm = future.join();
        } catch (RuntimeException e) {
            return PublishOutcome.failed("confirm failed: " + rootMessage(e));
        }
        if (!confirm.ack()) {
            return PublishOutcome.failed("nack: " + confirm.reason());
        }
        ReturnedMessage returned = correlation.getReturned();
        if (returned != null) {
            return PublishOutcome.returned("unroutable: " + returned.getReplyCode() + " " + returned.getReplyText()
                    + " (exchange '" + returned.getExchange() + "', routing key '" + returned.getRoutingKey() + "')");
        }
        return PublishOutcome.CONFIRMED;
    }

    /**
     * A publish to a missing exchange only shows as "channel closed" on the confirm; ask the broker once so the
     * reason that ends up in logs and dead letters names the exchange.
     */
    private List<PublishOutcome> explainFailures(BusinessSpec spec, List<PublishOutcome> outcomes) {
        String explanation;
        try {
            template.execute(channel -> channel.exchangeDeclarePassive(spec.exchange()));
            explanation = recentChannelError();
        } catch (RuntimeException e) {
            String cause = rootMessage(e);
            explanation = cause.contains("NOT_FOUND")
                    ? "exchange '" + spec.exchange() + "' does not exist (404 NOT_FOUND)" : recentChannelError();
        }
        if (explanation == null) {
            return outcomes;
        }
        List<PublishOutcome> explained = new ArrayList<>(outcomes.size());
        for (PublishOutcome outcome : outcomes) {
            boolean vague = outcome.status() == PublishOutcome.Status.FAILED
                    && (outcome.reason() == null || outcome.reason().contains("Channel closed")
                            || explanation.contains("NOT_FOUND"));
            explained.add(vague ? PublishOutcome.failed(explanation) : outcome);
        }
        return explained;
    }

    /**
     * The broker's reason for closing a channel in the last few seconds (e.g. 403 ACCESS_REFUSED): a nack caused
     * by it only says "Channel closed", which tells an operator nothing.
     */
    private String recentChannelError() {
        ChannelError error = lastChannelError;
        return error != null && System.nanoTime() - error.atNanos() < CHANNEL_ERROR_WINDOW_NANOS
                ? "nack: " + error.reason() : null;
    }

    private record ChannelError(String reason, long atNanos) {
    }

    private static final long CHANNEL_ERROR_WINDOW_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(10);

    private MessageProperties properties(DueMessage message) {
        MessageProperties properties = new MessageProperties();
        properties.setDeliveryMode(MessageDeliveryMode.PERSISTENT);
        properties.setMessageId(message.messageId());
        properties.setContentType(MessageProperties.CONTENT_TYPE_BYTES);
        properties.setHeader(RelayHeaders.BUSINESS, message.business());
        properties.setHeader(RelayHeaders.DUE_AT, message.dueAtMs());
        properties.setHeader(RelayHeaders.RELAYED_AT, clock.nowMs());
        properties.setHeader(RelayHeaders.SHARD, message.shard());
        properties.setHeader(RelayHeaders.ATTEMPT, message.attempt());
        if (message.byId()) {
            properties.setHeader(RelayHeaders.ID, message.id());
        }
        return properties;
    }

    @Override
    public void prepareExchange(BusinessSpec spec) {
        template.execute(channel -> {
            if (spec.declareExchange()) {
                channel.exchangeDeclare(spec.exchange(), spec.exchangeType(), true);
            } else {
                channel.exchangeDeclarePassive(spec.exchange());
            }
            return null;
        });
    }

    static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = root.getMessage();
        return root.getClass().getSimpleName() + (text == null ? "" : ": " + text);
    }
}
