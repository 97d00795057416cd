package io.delayrelay.app.support;

import io.delayrelay.api.DelayQueueKeys;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * Entries written out of the relay's sight and shown to it all at once: a test writes each shard's ids into
 * {@code K:i:staging} (pipelined, with their payloads), then {@link #reveal} renames every staging set to its shard key in
 * one {@code MULTI}. Written into {@code K:i} directly, a relay already running works on the first entries while the
 * write goes on, and a test that must catch it in the middle of its work on the whole set cannot.
 */
public final class StagedShards {

    private StagedShards() {}

    /** The staging sorted set of {@code shard}: {@code K:i:staging}. */
    public static byte[] key(DelayQueueKeys keys, int shard) {
        return bytes(keys.shard(shard) + ":staging");
    }

    /** Renames {@code K:i:staging} to {@code K:i} for shards 0 to {@code shards - 1}, in one transaction. */
    public static void reveal(RedisConnection c, DelayQueueKeys keys, int shards) {
        c.multi();
        for (int shard = 0; shard < shards; shard++) {
            c.keyCommands().rename(key(keys, shard), bytes(keys.shard(shard)));
        }
        c.exec();
    }
}
