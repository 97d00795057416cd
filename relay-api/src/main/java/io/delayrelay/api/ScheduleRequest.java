package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * One schedule of a batch ({@link DelayedMessageProducer#scheduleAll}): by message or by id, for an instant or after
 * a delay counted from Redis server time, by id optionally with per-message options. Each does exactly what the
 * single call of the same name does. Immutable; the factories check their arguments and name the bad one.
 *
 * <pre>{@code
 * producer.scheduleAll("order-timeout", List.of(
 *         ScheduleRequest.byIdAfter("order-1001", json1001, Duration.ofMinutes(30)),
 *         ScheduleRequest.byIdAfter("order-1002", json1002, Duration.ofMinutes(30))));
 * }</pre>
 */
public final class ScheduleRequest {

    private final byte[] member;
    private final byte[] payload;
    private final Instant dueAt;
    private final Duration delay;
    private final ScheduleOptions options;

    private ScheduleRequest(byte[] member, byte[] payload, Instant dueAt, Duration delay, ScheduleOptions options) {
        this.member = member;
        this.payload = payload;
        this.dueAt = dueAt;
        this.delay = delay;
        this.options = options;
    }

    /** By message, for an instant (as {@link DelayedMessageProducer#schedule(String, byte[], Instant)}). */
    public static ScheduleRequest message(byte[] message, Instant dueAt) {
        return new ScheduleRequest(requireMessage(message), null, Objects.requireNonNull(dueAt, "dueAt"), null, null);
    }

    /** By message, after a delay (as {@link DelayedMessageProducer#scheduleAfter(String, byte[], Duration)}). */
    public static ScheduleRequest messageAfter(byte[] message, Duration delay) {
        return new ScheduleRequest(requireMessage(message), null, null, requireDelay(delay), null);
    }

    /** By id, for an instant (as {@link DelayedMessageProducer#scheduleById(String, String, byte[], Instant)}). */
    public static ScheduleRequest byId(String id, byte[] message, Instant dueAt) {
        return new ScheduleRequest(
                idBytes(id), requireMessage(message), Objects.requireNonNull(dueAt, "dueAt"), null, null);
    }

    /** By id, after a delay (as {@link DelayedMessageProducer#scheduleByIdAfter(String, String, byte[], Duration)}). */
    public static ScheduleRequest byIdAfter(String id, byte[] message, Duration delay) {
        return new ScheduleRequest(idBytes(id), requireMessage(message), null, requireDelay(delay), null);
    }

    /**
     * The same schedule with per-message options (contract v2; only by id, as the single calls). The current trace
     * context is read when the batch is sent, as the single call reads it when called.
     */
    public ScheduleRequest withOptions(ScheduleOptions options) {
        Objects.requireNonNull(options, "options");
        if (payload == null) {
            throw new IllegalArgumentException(
                    "per-message options need a schedule by id (the message is kept in the payload hash)");
        }
        return new ScheduleRequest(member, payload, dueAt, delay, options);
    }

    /** Refuses a batch that is null or holds a null request, naming its position, before anything is sent. */
    static void checkBatch(List<ScheduleRequest> requests) {
        Objects.requireNonNull(requests, "requests");
        for (int i = 0; i < requests.size(); i++) {
            if (requests.get(i) == null) {
                throw new IllegalArgumentException("request #" + i + " of the batch is null");
            }
        }
    }

    /** The zset member: the message itself, or the id's UTF-8 bytes. */
    byte[] member() {
        return member;
    }

    /** The message kept under the id, or null for a schedule by message. */
    byte[] payload() {
        return payload;
    }

    /** The instant, or null when {@link #delay()} is set. */
    Instant dueAt() {
        return dueAt;
    }

    /** The delay from Redis server time, or null when {@link #dueAt()} is set. */
    Duration delay() {
        return delay;
    }

    /** The options, or null. */
    ScheduleOptions options() {
        return options;
    }

    /** Whether it is by id. */
    public boolean byId() {
        return payload != null;
    }

    /** Runs the single call that does the same as this request (how a producer without batches sends it). */
    long sendAlone(DelayedMessageProducer producer, String business) {
        if (payload == null) {
            return dueAt != null
                    ? producer.schedule(business, member, dueAt)
                    : producer.scheduleAfter(business, member, delay);
        }
        String id = new String(member, StandardCharsets.UTF_8);
        if (options == null) {
            return dueAt != null
                    ? producer.scheduleById(business, id, payload, dueAt)
                    : producer.scheduleByIdAfter(business, id, payload, delay);
        }
        return dueAt != null
                ? producer.scheduleById(business, id, payload, dueAt, options)
                : producer.scheduleByIdAfter(business, id, payload, delay, options);
    }

    @Override
    public String toString() {
        String what = payload == null
                ? "message of " + member.length + " bytes"
                : "id '" + new String(member, StandardCharsets.UTF_8) + "'";
        return "ScheduleRequest[" + what + (dueAt != null ? ", at " + dueAt : ", after " + delay)
                + (options != null ? ", with options" : "") + "]";
    }

    private static byte[] requireMessage(byte[] message) {
        return Objects.requireNonNull(message, "message");
    }

    private static byte[] idBytes(String id) {
        if (id == null || id.isEmpty()) {
            throw new IllegalArgumentException("id must not be empty, was '" + id + "'");
        }
        return id.getBytes(StandardCharsets.UTF_8);
    }

    private static Duration requireDelay(Duration delay) {
        if (delay == null || delay.isNegative()) {
            throw new IllegalArgumentException("delay must be zero or positive, was " + delay);
        }
        return delay;
    }
}
