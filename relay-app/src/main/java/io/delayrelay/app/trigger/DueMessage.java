package io.delayrelay.app.trigger;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * One entry that fell due and is about to be published.
 *
 * @param business    business name
 * @param shard       shard index it was popped from
 * @param member      the zset member: the message, or the id when scheduled by id
 * @param body        the bytes to publish: the payload when scheduled by id, else the member
 * @param byId        whether the entry was scheduled by id (its payload was found)
 * @param dueAtMs     the due time (its score), epoch ms
 * @param poppedAtMs  Redis time when it was popped, epoch ms
 * @param attempt     delivery attempt, 1 for the first
 * @param messageId   stable across redeliveries of the same scheduled entry
 * @param headers     the producer's AMQP headers (per-message options of the contract v2), published beside the
 *                    relay's own; empty when none
 * @param slot        the recurring schedule's slot this message fires for, or null (docs/schedules.md)
 */
public record DueMessage(
        String business,
        int shard,
        byte[] member,
        byte[] body,
        boolean byId,
        long dueAtMs,
        long poppedAtMs,
        int attempt,
        String messageId,
        Map<String, String> headers,
        Slot slot) {

    /**
     * A slot of a recurring schedule: the schedule's name and the slot time (epoch ms), published as
     * {@code x-delay-schedule} and {@code x-delay-slot}.
     */
    public record Slot(String schedule, long slotMs) {}

    /** A message that no recurring schedule fired. */
    public DueMessage(
            String business,
            int shard,
            byte[] member,
            byte[] body,
            boolean byId,
            long dueAtMs,
            long poppedAtMs,
            int attempt,
            String messageId,
            Map<String, String> headers) {
        this(business, shard, member, body, byId, dueAtMs, poppedAtMs, attempt, messageId, headers, null);
    }

    /** A message without producer headers. */
    public DueMessage(
            String business,
            int shard,
            byte[] member,
            byte[] body,
            boolean byId,
            long dueAtMs,
            long poppedAtMs,
            int attempt,
            String messageId) {
        this(business, shard, member, body, byId, dueAtMs, poppedAtMs, attempt, messageId, Map.of(), null);
    }

    public String bodyAsString() {
        return new String(body, StandardCharsets.UTF_8);
    }

    /** The id, when scheduled by id; else {@code null}. */
    public String id() {
        return byId ? new String(member, StandardCharsets.UTF_8) : null;
    }
}
