package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Schedules, cancels and reschedules delayed messages of a business.
 *
 * <p>Two ways to schedule:
 * <ul>
 *   <li><b>by message</b>: the message itself is the zset member. Scheduling the same bytes twice keeps one
 *       entry (the later due time wins).</li>
 *   <li><b>by id</b>: the id is the member and the message is kept in the shard's payload hash; cancel and
 *       reschedule by id without knowing the message.</li>
 * </ul>
 * Delays are added to the Redis server's clock, never the producer's.
 */
public interface DelayedMessageProducer {

    /** Schedules the message for an instant. Returns the due time in epoch milliseconds. */
    long schedule(String business, byte[] message, Instant dueAt);

    /** Schedules the message after a delay counted from Redis server time. Returns the due time. */
    long scheduleAfter(String business, byte[] message, Duration delay);

    /**
     * Schedules a message under an id, for an instant. Scheduling an existing id replaces its message and time, also
     * when it was scheduled under an earlier shard count (one live entry per id), and starts afresh: a new AMQP message
     * id. An earlier delivery of the id that is in flight still happens.
     */
    long scheduleById(String business, String id, byte[] message, Instant dueAt);

    /** Schedules a message under an id, after a delay counted from Redis server time. */
    long scheduleByIdAfter(String business, String id, byte[] message, Duration delay);

    /**
     * Schedules a message under an id for an instant, with per-message options (contract v2: an expiry, AMQP
     * headers, the current trace context). Needs relays that read contract v2 (an older relay would publish the
     * stored envelope as the body).
     */
    default long scheduleById(String business, String id, byte[] message, Instant dueAt, ScheduleOptions options) {
        throw new UnsupportedOperationException(
                "per-message options are not supported by " + getClass().getName());
    }

    /** Like {@link #scheduleById(String, String, byte[], Instant, ScheduleOptions)}, after a delay. */
    default long scheduleByIdAfter(
            String business, String id, byte[] message, Duration delay, ScheduleOptions options) {
        throw new UnsupportedOperationException(
                "per-message options are not supported by " + getClass().getName());
    }

    /**
     * Schedules a batch of messages of one business, each exactly as its single call would (by message or by id, at
     * an instant or after a delay, with options): one Redis round trip for the batch instead of one per message, where
     * the implementation can (the Redis producer pipelines them; this default sends them one by one). Returns each
     * request's due time in epoch ms, in the batch's order. Not atomic as a whole: each request is. When some fail,
     * the others are still scheduled and a {@link ScheduleBatchException} says which failed and with what.
     */
    default long[] scheduleAll(String business, List<ScheduleRequest> requests) {
        ScheduleRequest.checkBatch(requests);
        long[] due = new long[requests.size()];
        Map<Integer, RuntimeException> failures = new TreeMap<>();
        for (int i = 0; i < due.length; i++) {
            try {
                due[i] = requests.get(i).sendAlone(this, business);
            } catch (RuntimeException e) {
                due[i] = -1;
                failures.put(i, e);
            }
        }
        if (!failures.isEmpty()) {
            throw new ScheduleBatchException(business, due, failures);
        }
        return due;
    }

    /** Removes a scheduled message. False when it was not scheduled (never was, already relayed, or in flight). */
    boolean cancel(String business, byte[] message);

    /**
     * Removes a message scheduled by id, with its payload, from every shard it may be in (it may have been scheduled
     * under several shard counts). False when the id was not scheduled. A payload that an in-flight delivery or a dead
     * letter of the id still needs is kept.
     */
    boolean cancelById(String business, String id);

    /** Moves a scheduled message to a new instant. False when it was not scheduled. */
    boolean reschedule(String business, byte[] message, Instant dueAt);

    /**
     * Moves a message scheduled by id to a new instant. False when the id was not scheduled.
     *
     * @throws RescheduleAfterExpiryException when {@code dueAt} is after the message's expiry
     *     ({@link ScheduleOptions}); nothing is changed
     */
    boolean rescheduleById(String business, String id, Instant dueAt);

    /**
     * How many entries are scheduled (not yet popped) over all shards of the business: the entries waiting in the
     * shard zsets plus the live entries of the cold tier (far-future entries the relay moved into compressed blocks,
     * docs/cold-tier.md). An entry the relay moves between the two while this counts may be counted twice or not at
     * all (each shard is read in one call, the shards one after the other).
     */
    long count(String business);

    /**
     * The next {@code limit} entries by due time over all shards, earliest first, from the shard zsets: entries of
     * the cold tier (due later than {@code cold-after}, in compressed blocks) are not listed; the relay's ops
     * endpoint lists them (docs/cold-tier.md).
     */
    List<ScheduledEntry> peek(String business, int limit);

    default long schedule(String business, String message, Instant dueAt) {
        return schedule(business, utf8(message), dueAt);
    }

    default long scheduleAfter(String business, String message, Duration delay) {
        return scheduleAfter(business, utf8(message), delay);
    }

    default long scheduleById(String business, String id, String message, Instant dueAt) {
        return scheduleById(business, id, utf8(message), dueAt);
    }

    default long scheduleByIdAfter(String business, String id, String message, Duration delay) {
        return scheduleByIdAfter(business, id, utf8(message), delay);
    }

    default boolean cancel(String business, String message) {
        return cancel(business, utf8(message));
    }

    default boolean reschedule(String business, String message, Instant dueAt) {
        return reschedule(business, utf8(message), dueAt);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
