package io.delayrelay.app.engine.wake;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

import io.lettuce.core.pubsub.RedisPubSubAdapter;

/**
 * Decodes keyspace notifications, as bytes on the Lettuce event loop (one per write: no strings). A write to a shard
 * key is peeked; every notification counts towards the shard's busy check. A confirmed subscription sweeps its shard.
 */
final class Notifications extends RedisPubSubAdapter<byte[], byte[]> {

    private static final byte[] ZADD = "zadd".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ZINCR = "zincr".getBytes(StandardCharsets.US_ASCII);

    private final List<KeyspaceSubscription> subscriptions;
    private final LongSupplier nowMs;

    /** {@code nowMs}: the estimated Redis time, epoch ms. */
    Notifications(List<KeyspaceSubscription> subscriptions, LongSupplier nowMs) {
        this.subscriptions = subscriptions;
        this.nowMs = nowMs;
    }

    @Override
    public void message(byte[] channel, byte[] event) {
        boolean write = Arrays.equals(ZADD, event) || Arrays.equals(ZINCR, event);
        for (KeyspaceSubscription s : subscriptions) {
            int shard = s.shardOf(channel);
            if (shard >= 0) {
                // every notification counts towards busy (each costs a wake-up); only writes are peeked
                s.notified().incrementAndGet(shard);
                if (write) {
                    s.peeks().notified(shard);
                }
                return;
            }
        }
    }

    /**
     * After every (re)subscription of a shard's channel (a shard newly this instance's, a reconnect, a new cluster
     * master) the workers pop that shard: notifications may have been lost meanwhile.
     */
    @Override
    public void subscribed(byte[] channel, long count) {
        for (KeyspaceSubscription s : subscriptions) {
            int shard = s.shardOf(channel);
            if (shard >= 0) {
                s.wakeups().announce(shard, nowMs.getAsLong());
                return;
            }
        }
    }
}
