package io.delayrelay.app.engine.wake;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * One business heard through keyspace notifications: its channels' common prefix (before the shard number), its
 * peeks, the shards whose channels are subscribed ({@code heard}) and the busy shards polled instead. Encodes and
 * decodes its channel names as bytes: one decode per write, on the Lettuce event loop. Guarded by the source's lock.
 */
record KeyspaceSubscription(
        ShardWakeups wakeups,
        byte[] channelPrefix,
        ShardPeeks peeks,
        BitSet heard,
        AtomicIntegerArray notified,
        int[] busyChecks,
        BitSet busy,
        long[] busySinceNanos) {

    /** Shards per business whose notifications are followed (more are swept only). */
    static final int MAX_SHARDS = 4096;

    /**
     * A shard heard this often (notifications per second, in each of {@link #BUSY_CHECKS} checks in a row) is polled
     * instead: its channel is unsubscribed and the workers pop it every {@link #BUSY_POLL}. A notification costs the
     * relay a wake-up of its event loop and Redis a write; at this rate the polls cost less.
     */
    static final int BUSY_PER_SECOND = 100;
    /** Checks in a row a shard must be that busy: a burst of writes is heard (peeks are cheap for a burst). */
    static final int BUSY_CHECKS = 2;
    /** How often a busy shard is popped: the most a write that is due at once waits. */
    static final Duration BUSY_POLL = Duration.ofMillis(10);
    /** How long a busy shard stays polled before it is heard again for one check, to see whether it still is. */
    static final Duration BUSY_RECHECK = Duration.ofSeconds(5);

    KeyspaceSubscription(ShardWakeups wakeups, byte[] channelPrefix, ShardPeeks peeks) {
        this(
                wakeups,
                channelPrefix,
                peeks,
                new BitSet(),
                new AtomicIntegerArray(MAX_SHARDS),
                new int[MAX_SHARDS],
                new BitSet(),
                new long[MAX_SHARDS]);
    }

    byte[][] channels(BitSet shards) {
        byte[][] channels = new byte[shards.cardinality()][];
        int i = 0;
        for (int shard = shards.nextSetBit(0); shard >= 0; shard = shards.nextSetBit(shard + 1)) {
            channels[i++] = channel(shard);
        }
        return channels;
    }

    byte[] channel(int shard) {
        byte[] digits = Integer.toString(shard).getBytes(StandardCharsets.US_ASCII);
        byte[] channel = Arrays.copyOf(channelPrefix, channelPrefix.length + digits.length);
        System.arraycopy(digits, 0, channel, channelPrefix.length, digits.length);
        return channel;
    }

    /**
     * Subscribes the channels of the shards {@code wakeups} pops now and unsubscribes the others (its share in the
     * fleet's division changed, or its shard count). A busy shard no longer this instance's is no longer polled
     * either. A shard heard again is popped as its pops report, and swept once its subscription is confirmed.
     */
    void follow(KeyspaceConnection redis) {
        BitSet owned = wakeups.ownedShards();
        owned.clear(MAX_SHARDS, Math.max(MAX_SHARDS, owned.length()));
        BitSet released = (BitSet) busy.clone();
        released.andNot(owned);
        for (int shard = released.nextSetBit(0); shard >= 0; shard = released.nextSetBit(shard + 1)) {
            busy.clear(shard);
            wakeups.pollEvery(shard, 0);
        }
        BitSet wanted = (BitSet) owned.clone();
        wanted.andNot(busy);
        BitSet added = (BitSet) wanted.clone();
        added.andNot(heard);
        BitSet dropped = (BitSet) heard.clone();
        dropped.andNot(wanted);
        if (!dropped.isEmpty()) {
            redis.unsubscribe(channels(dropped));
            heard.andNot(dropped);
        }
        if (!added.isEmpty()) {
            redis.subscribe(channels(added));
            heard.or(added);
            for (int shard = added.nextSetBit(0); shard >= 0; shard = added.nextSetBit(shard + 1)) {
                wakeups.pollEvery(shard, 0);
            }
        }
    }

    /** Subscribes every heard channel again (masters added to a cluster hear nothing until then). */
    void subscribeAgain(KeyspaceConnection redis) {
        if (!heard.isEmpty()) {
            redis.subscribe(channels(heard));
        }
    }

    /** Stops hearing this business. */
    void unsubscribeAll(KeyspaceConnection redis) {
        if (!heard.isEmpty()) {
            redis.unsubscribe(channels(heard));
        }
    }

    /** The shard of this business a channel names, or -1 when it is not one of its shards. */
    int shardOf(byte[] channel) {
        return shardOf(channel, channelPrefix, peeks.maxShards());
    }

    /** The shard number after {@code prefix} in {@code channel}, or -1 when the channel is not one of its shards. */
    static int shardOf(byte[] channel, byte[] prefix, int maxShards) {
        int n = channel.length - prefix.length;
        if (n < 1 || n > 4 || !Arrays.equals(channel, 0, prefix.length, prefix, 0, prefix.length)) {
            return -1;
        }
        int shard = 0;
        for (int i = prefix.length; i < channel.length; i++) {
            int digit = channel[i] - '0';
            if (digit < 0 || digit > 9) {
                return -1;
            }
            shard = shard * 10 + digit;
        }
        return shard < maxShards ? shard : -1;
    }

    /**
     * Marks busy the heard shards notified at least {@link #BUSY_PER_SECOND} times a second in each of the last
     * {@link #BUSY_CHECKS} checks, {@code checkMs} apart: the workers poll them from now on, before their channels are
     * unsubscribed. Shards busy for {@link #BUSY_RECHECK} are heard again for a check, to see whether they still are.
     */
    void weighBusy(long nowNanos, long checkMs) {
        long busyAt = BUSY_PER_SECOND * checkMs / 1000;
        for (int shard = heard.nextSetBit(0); shard >= 0; shard = heard.nextSetBit(shard + 1)) {
            boolean busyNow = notified.getAndSet(shard, 0) >= busyAt;
            busyChecks[shard] = busyNow ? busyChecks[shard] + 1 : 0;
            if (busyChecks[shard] >= BUSY_CHECKS) {
                busyChecks[shard] = 0;
                busy.set(shard);
                busySinceNanos[shard] = nowNanos;
                wakeups.pollEvery(shard, BUSY_POLL.toMillis());
            }
        }
        for (int shard = busy.nextSetBit(0); shard >= 0; shard = busy.nextSetBit(shard + 1)) {
            if (nowNanos - busySinceNanos[shard] >= BUSY_RECHECK.toNanos()) {
                busy.clear(shard);
                notified.set(shard, 0);
            }
        }
    }
}
