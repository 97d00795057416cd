package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * One scheduled entry as found in a shard.
 *
 * @param shard   the shard index
 * @param member  the zset member: the message, or the id for entries scheduled by id
 * @param payload the message stored for the id, or {@code null} when the member is the message
 * @param dueAtMs the due time, epoch milliseconds
 */
public record ScheduledEntry(int shard, byte[] member, byte[] payload, long dueAtMs) {

    /** The bytes the relay will publish: the payload when scheduled by id, else the member. */
    public byte[] message() {
        return payload != null ? payload : member;
    }

    public String memberAsString() {
        return new String(member, StandardCharsets.UTF_8);
    }

    public Instant dueAt() {
        return Instant.ofEpochMilli(dueAtMs);
    }
}
