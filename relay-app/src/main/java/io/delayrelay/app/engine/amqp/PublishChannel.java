package io.delayrelay.app.engine.amqp;

import java.io.IOException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Method;
import com.rabbitmq.client.ReturnListener;
import com.rabbitmq.client.ShutdownListener;
import com.rabbitmq.client.ShutdownSignalException;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.support.Exceptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker's own amqp-client channel in confirm mode. Each publish is booked under the channel's publish
 * sequence number, and the broker's acks, nacks, returns and the channel's close settle those bookings directly:
 * no Spring wrapper, no per-message future. The channel never sits idle while confirms are outstanding: a worker
 * keeps publishing its next batches on it (pipelined confirms).
 *
 * <p>If amqp-client refuses a message after it advanced the sequence number (e.g. its headers exceed the frame
 * size), the broker's numbering and ours no longer match for later publishes: the channel is retired (no more
 * publishes; closed once the confirms booked before the refusal are in) and the worker opens a fresh one.
 */
final class PublishChannel implements ConfirmListener, ReturnListener, ShutdownListener {

    private static final Logger log = LoggerFactory.getLogger(PublishChannel.class);

    private record Booking(PendingBatch batch, int index, String messageId) {}

    private final Channel channel;
    private final long retireTimeoutMs;
    private final ConcurrentSkipListMap<Long, Booking> bookings = new ConcurrentSkipListMap<>();
    private volatile boolean retired;
    private volatile PublishOutcome closedOutcome;

    private PublishChannel(Channel channel, long retireTimeoutMs) {
        this.channel = channel;
        this.retireTimeoutMs = retireTimeoutMs;
    }

    /** Opens a channel on {@code connection} and turns on publisher confirms. */
    static PublishChannel open(Connection connection, long retireTimeoutMs) throws IOException {
        Channel channel = connection.createChannel();
        if (channel == null) {
            throw new IOException("the broker connection has no free channel (channel-max reached)");
        }
        PublishChannel publishChannel = new PublishChannel(channel, retireTimeoutMs);
        channel.addConfirmListener(publishChannel);
        channel.addReturnListener(publishChannel);
        channel.addShutdownListener(publishChannel);
        channel.confirmSelect();
        return publishChannel;
    }

    /** Whether new publishes may go on this channel. */
    boolean usable() {
        return !retired && closedOutcome == null && channel.isOpen();
    }

    /** The outcome the channel's close gave its outstanding messages; null while open. */
    PublishOutcome closedOutcome() {
        return closedOutcome;
    }

    /**
     * Publishes one persistent, mandatory message and books its confirm as message {@code index} of {@code batch}.
     * Throws what {@code basicPublish} throws; the booking is withdrawn then. Its frames are held until {@code wave}
     * ends when the connection's sockets come from {@link CoalescingSocketFactory}.
     */
    void publish(
            String exchange,
            String routingKey,
            AMQP.BasicProperties properties,
            byte[] body,
            PendingBatch batch,
            int index,
            CoalescingSocketFactory.Wave wave)
            throws IOException {
        long sequence = channel.getNextPublishSeqNo();
        bookings.put(sequence, new Booking(batch, index, properties.getMessageId()));
        try {
            wave.defer(() -> channel.basicPublish(exchange, routingKey, true, properties, body));
        } catch (IOException | RuntimeException e) {
            bookings.remove(sequence);
            if (channel.getNextPublishSeqNo() != sequence && channel.isOpen()) {
                retire(e);
            }
            throw e;
        }
    }

    /** Drops the bookings of a batch that timed out: a late confirm for them finds nothing to settle. */
    void forget(PendingBatch batch) {
        bookings.values().removeIf(b -> b.batch() == batch);
        closeIfRetiredAndIdle();
    }

    private void retire(Exception cause) {
        retired = true;
        log.warn(
                "publish channel {} retired after a refused publish advanced its confirm numbering ({}); "
                        + "a fresh channel takes over",
                channel.getChannelNumber(),
                Exceptions.rootMessage(cause));
        // Confirms booked before the refusal are still numbered right: wait for them, but not forever.
        CompletableFuture.delayedExecutor(retireTimeoutMs, TimeUnit.MILLISECONDS)
                .execute(this::close);
        closeIfRetiredAndIdle();
    }

    private void closeIfRetiredAndIdle() {
        if (retired && bookings.isEmpty()) {
            // Never close on the connection's own thread (we may be in a confirm callback): close() waits for
            // close-ok, which that very thread delivers.
            CompletableFuture.runAsync(this::close);
        }
    }

    void close() {
        try {
            if (channel.isOpen()) {
                channel.close();
            }
        } catch (IOException | TimeoutException | RuntimeException e) {
            log.debug("closing publish channel {} failed", channel.getChannelNumber(), e);
        }
    }

    @Override
    public void handleAck(long deliveryTag, boolean multiple) {
        settle(deliveryTag, multiple, PublishOutcome.CONFIRMED);
    }

    @Override
    public void handleNack(long deliveryTag, boolean multiple) {
        settle(
                deliveryTag,
                multiple,
                PublishOutcome.failed(
                        PublishOutcome.Cause.NACK,
                        "nack: the broker refused the message (e.g. a queue at its length limit with reject-publish)"));
    }

    private void settle(long deliveryTag, boolean multiple, PublishOutcome outcome) {
        if (multiple) {
            Map.Entry<Long, Booking> first;
            while ((first = bookings.firstEntry()) != null && first.getKey() <= deliveryTag) {
                if (bookings.remove(first.getKey(), first.getValue())) {
                    first.getValue().batch().complete(first.getValue().index(), outcome);
                }
            }
        } else {
            Booking booking = bookings.remove(deliveryTag);
            if (booking != null) {
                booking.batch().complete(booking.index(), outcome);
            }
        }
        closeIfRetiredAndIdle();
    }

    /**
     * A mandatory message no queue took. The broker sends the return before the message's ack and in publish
     * order, so it belongs to the earliest booking with that message id that has no outcome yet.
     */
    @Override
    public void handleReturn(
            int replyCode,
            String replyText,
            String exchange,
            String routingKey,
            AMQP.BasicProperties properties,
            byte[] body) {
        String messageId = properties == null ? null : properties.getMessageId();
        for (Booking booking : bookings.values()) {
            if (Objects.equals(booking.messageId(), messageId)
                    && !booking.batch().has(booking.index())) {
                booking.batch()
                        .complete(
                                booking.index(),
                                PublishOutcome.returned("unroutable: " + replyCode + " " + replyText + " (exchange '"
                                        + exchange + "', routing key '" + routingKey + "')"));
                return;
            }
        }
    }

    @Override
    public void shutdownCompleted(ShutdownSignalException cause) {
        PublishOutcome outcome = closeOutcome(cause);
        closedOutcome = outcome;
        Map.Entry<Long, Booking> first;
        while ((first = bookings.pollFirstEntry()) != null) {
            first.getValue().batch().complete(first.getValue().index(), outcome);
        }
    }

    /**
     * What a close means for the messages it caught: a broker's channel error names its reason (404 for a
     * missing exchange, 403 for a refused write), a connection loss says so.
     */
    static PublishOutcome closeOutcome(ShutdownSignalException cause) {
        if (cause.isInitiatedByApplication()) {
            return PublishOutcome.failed(
                    PublishOutcome.Cause.CHANNEL_CLOSED,
                    "confirm failed: the relay closed the channel before the confirm came");
        }
        Method reason = cause.getReason();
        if (reason instanceof AMQP.Channel.Close close) {
            String text = close.getReplyText();
            return switch (close.getReplyCode()) {
                case AMQP.NOT_FOUND -> PublishOutcome.failed(
                        PublishOutcome.Cause.EXCHANGE_NOT_FOUND,
                        "exchange does not exist (" + close.getReplyCode() + " " + text + ")");
                case AMQP.ACCESS_REFUSED -> PublishOutcome.failed(
                        PublishOutcome.Cause.ACCESS_REFUSED, "nack: " + close.getReplyCode() + " " + text);
                default -> PublishOutcome.failed(
                        PublishOutcome.Cause.CHANNEL_CLOSED,
                        "confirm failed: channel closed by the broker (" + close.getReplyCode() + " " + text + ")");
            };
        }
        return PublishOutcome.failed(
                PublishOutcome.Cause.CHANNEL_CLOSED,
                "confirm failed: connection lost before the confirm (" + Exceptions.rootMessage(cause) + ")");
    }
}
