package io.delayrelay.app.engine;

import java.util.List;

/**
 * What one pop returned.
 *
 * @param redisNowMs Redis time of the pop; 0 when the shard was empty (not read)
 * @param entries    entries now in flight, in due order
 * @param nextDueMs  the earliest score left in the shard (a lease deadline included), -1 when it is empty, or
 *                   {@code redisNowMs} when the batch came back full (more is due)
 * @param token      the lease token of this pop: acks, requeues and releases of its entries must present it, so
 *                   they act only on this lease (never on a later lease of the same member)
 * @param expiredLeases leases of the shard the pop saw expired (held by a token past their deadline): the caller
 *                   takes them back ({@link ShardStore#requeueExpired}); no periodic reaper round does
 * @param late       entries the pop found past the business's max-lateness or their own expiry: not handed out, but
 *                   dead-lettered (reason expired) or dropped, as the business's on-late said
 */
public record PopResult(
        long redisNowMs, List<Entry> entries, long nextDueMs, String token, int expiredLeases, List<Late> late) {

    /** {@link #nextDueMs()} of a shard a pop of several left out: the call's batch was used up, it is still due. */
    public static final long SKIPPED = -2;

    /** A pop without late entries. */
    public PopResult(long redisNowMs, List<Entry> entries, long nextDueMs, String token, int expiredLeases) {
        this(redisNowMs, entries, nextDueMs, token, expiredLeases, List.of());
    }

    /**
     * An entry the late policy took.
     *
     * @param member    zset member
     * @param dueAtMs   its original due time
     * @param expiresAtMs the per-message expiry that made it late, or -1 when max-lateness did
     */
    public record Late(byte[] member, long dueAtMs, long expiresAtMs) {}

    /**
     * @param member   zset member
     * @param dueAtMs  its score
     * @param payload  message stored for the member (scheduled by id), or null
     * @param attempts failed delivery attempts so far
     */
    public record Entry(byte[] member, long dueAtMs, byte[] payload, int attempts) {}

    public boolean isEmpty() {
        return entries.isEmpty();
    }

    /** Whether a pop of several shards left this one out (the call's batch size or byte budget was used up). */
    public boolean skipped() {
        return nextDueMs == SKIPPED;
    }

    /** Whether the shard still held due entries after this pop (the batch was full, or its byte budget was). */
    public boolean moreDue() {
        return redisNowMs > 0 && nextDueMs >= 0 && nextDueMs <= redisNowMs;
    }
}
