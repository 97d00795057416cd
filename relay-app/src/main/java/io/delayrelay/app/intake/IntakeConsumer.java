package io.delayrelay.app.intake;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import io.delayrelay.api.ScheduleBatchException;
import io.delayrelay.api.ScheduleRequest;
import io.delayrelay.app.config.IntakeSettings;
import io.delayrelay.app.engine.amqp.IntakeEnvelope;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.support.Exceptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes one intake's messages in. The broker's deliveries queue up; a writer thread of the intake writes what
 * waits to Redis in one pipelined batch (by id), then acknowledges the batch. A message that cannot be scheduled
 * goes to the business's dead set with its reason. When Redis fails, the messages go back to the broker (after a
 * pause) and come again: nothing is acknowledged unwritten.
 */
final class IntakeConsumer extends DefaultConsumer {

    private static final Logger log = LoggerFactory.getLogger(IntakeConsumer.class);

    /** How long a failed write waits before its messages go back to the broker. */
    static final Duration RETRY_PAUSE = Duration.ofSeconds(1);

    /** Most messages written in one pipelined batch. */
    static final int MAX_BATCH = 500;

    /** How a message leaves the intake. */
    enum Outcome {
        SCHEDULED,
        DEAD
    }

    /** Where the consumer writes: the relay's Redis, through the producer contract. */
    interface Writer {
        /** Schedules a batch by id; throws {@link ScheduleBatchException} naming the requests that failed. */
        void scheduleAll(String business, List<ScheduleRequest> requests);

        /** Keeps the message as a dead letter; false when the id is taken by a scheduled entry. */
        boolean dead(String business, String id, byte[] payload, String reason);

        /** Redis time, epoch ms. */
        long nowMs();

        /** Most bytes the business pops in one call, or -1 when unknown. */
        long batchBytes(String business);

        /** What to store for an envelope: compressed with the business's dictionary, or as it is. */
        byte[] stored(String business, byte[] envelope);
    }

    /** What the consumer reports. */
    interface Listener {
        void received(String intake, Outcome outcome, int count);

        void failed(String intake, String reason, Throwable error);
    }

    private record Delivery(long tag, String routingKey, AMQP.BasicProperties properties, byte[] body) {}

    private final String name;
    private final String business;
    private final IntakeSettings settings;
    private final Writer writer;
    private final Listener listener;
    private final BlockingQueue<Delivery> waiting = new LinkedBlockingQueue<>();
    private final Thread thread;

    IntakeConsumer(Channel channel, String name, IntakeSettings settings, Writer writer, Listener listener) {
        super(channel);
        this.name = name;
        this.business = settings.businessOf(name);
        this.settings = settings;
        this.writer = writer;
        this.listener = listener;
        this.thread = DaemonThreads.named("delay-relay-intake-" + name).newThread(this::run);
        thread.start();
    }

    @Override
    public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
        waiting.add(new Delivery(envelope.getDeliveryTag(), envelope.getRoutingKey(), properties, body));
    }

    @Override
    public void handleShutdownSignal(String consumerTag, ShutdownSignalException sig) {
        // the channel is gone: what waits here is unacknowledged, so the broker delivers it again
        thread.interrupt();
    }

    /** Stops the writer thread; messages not acknowledged go back to the queue with their channel. */
    void stop() {
        thread.interrupt();
    }

    private void run() {
        List<Delivery> batch = new ArrayList<>(MAX_BATCH);
        try {
            while (!Thread.currentThread().isInterrupted()) {
                batch.add(waiting.take());
                waiting.drainTo(batch, MAX_BATCH - 1);
                write(batch);
                batch.clear();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (AlreadyClosedException | IOException e) {
            log.debug("intake={}: channel closed, unacknowledged messages go back to the queue", name);
        }
    }

    private void write(List<Delivery> batch) throws IOException, InterruptedException {
        List<ScheduleRequest> requests = new ArrayList<>(batch.size());
        List<Delivery> scheduled = new ArrayList<>(batch.size());
        int dead = 0;
        try {
            for (Delivery d : batch) {
                ScheduleRequest request = request(d);
                if (request == null) {
                    dead++;
                } else {
                    requests.add(request);
                    scheduled.add(d);
                }
            }
            if (!requests.isEmpty()) {
                writer.scheduleAll(business, requests);
            }
        } catch (ScheduleBatchException e) {
            settlePartly(batch, scheduled, e);
            return;
        } catch (RuntimeException e) {
            handBack(batch.get(batch.size() - 1).tag(), true, batch.size(), e);
            return;
        }
        getChannel().basicAck(batch.get(batch.size() - 1).tag(), true);
        if (!scheduled.isEmpty()) {
            listener.received(name, Outcome.SCHEDULED, scheduled.size());
        }
        if (dead > 0) {
            listener.received(name, Outcome.DEAD, dead);
        }
    }

    /** Acknowledges what was written, hands the rest back. */
    private void settlePartly(List<Delivery> batch, List<Delivery> scheduled, ScheduleBatchException e)
            throws IOException, InterruptedException {
        java.util.Set<Long> failed = new java.util.HashSet<>();
        e.failures().keySet().forEach(i -> failed.add(scheduled.get(i).tag()));
        RuntimeException first = e.failures().values().iterator().next();
        for (Delivery d : batch) {
            if (!failed.contains(d.tag())) {
                getChannel().basicAck(d.tag(), false);
            }
        }
        listener.received(name, Outcome.SCHEDULED, scheduled.size() - failed.size());
        handBack(-1, false, failed.size(), first);
        for (long tag : failed) {
            getChannel().basicNack(tag, false, true);
        }
    }

    private void handBack(long tag, boolean multiple, int count, RuntimeException e)
            throws IOException, InterruptedException {
        listener.failed(name, "write failed", e);
        log.warn(
                "intake={} business={}: writing {} message(s) to Redis failed, handing them back to RabbitMQ in {} ms: {}",
                name,
                business,
                count,
                RETRY_PAUSE.toMillis(),
                Exceptions.rootMessage(e));
        Thread.sleep(RETRY_PAUSE.toMillis());
        if (tag >= 0) {
            getChannel().basicNack(tag, multiple, true);
        }
    }

    /** The request that schedules the delivery, or null when it went to the dead set. */
    private ScheduleRequest request(Delivery d) {
        AMQP.BasicProperties properties = d.properties();
        Map<String, Object> headers = properties.getHeaders();
        DelayHeaders.Due due = DelayHeaders.of(headers);
        String messageId = properties.getMessageId();
        boolean idIsMessageId = messageId != null && !messageId.isBlank();
        String id = idIsMessageId ? messageId : UUID.randomUUID().toString();
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
        byte[] payload = IntakeEnvelope.encode(settings.getDeliverTo(), d.routingKey(), kept, d.body(), idIsMessageId);
        String bad = problem(due, payload);
        if (bad != null) {
            dead(id, payload, bad);
            return null;
        }
        if (settings.isCompress()) {
            payload = writer.stored(business, payload);
        }
        return due instanceof DelayHeaders.At at
                ? ScheduleRequest.byId(id, payload, Instant.ofEpochMilli(at.at()))
                : ScheduleRequest.byIdAfter(id, payload, Duration.ofMillis(((DelayHeaders.After) due).ms()));
    }

    /** Why the message cannot be scheduled, or null. */
    private String problem(DelayHeaders.Due due, byte[] payload) {
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

    private void dead(String id, byte[] payload, String reason) {
        String why = "intake " + name + ": " + reason;
        if (!writer.dead(business, id, payload, why)) {
            // the message id names a scheduled entry: the bad message must not replace its payload
            writer.dead(business, id + ":rejected:" + UUID.randomUUID(), payload, why);
        }
        log.warn("intake={} business={}: message id={} dead-lettered: {}", name, business, id, reason);
    }
}
