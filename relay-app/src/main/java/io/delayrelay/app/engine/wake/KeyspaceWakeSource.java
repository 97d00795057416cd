package io.delayrelay.app.engine.wake;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.support.Exceptions;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisSortedSetAsyncCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Redis keyspace notifications as the wake source: a {@code zadd} on a shard key {@code K:i}, written by any
 * producer (even {@code redis-cli ZADD}), makes the relay read that shard's earliest score ({@link ShardPeeks}: one
 * {@code ZRANGE K:i 0 0 WITHSCORES}, at most one per shard per 5 ms), and the business's workers pop the shard when
 * that entry falls due: within milliseconds of its due time, however far ahead it was written, and without a pop
 * per write. A notification is only a signal, never storage: a lost one costs at most one safety sweep.
 * Notifications are decoded as bytes (one per write, on the Lettuce event loop: no strings).
 *
 * <p>Only the shards this instance pops are heard: it SUBSCRIBEs the exact channels {@code __keyspace@<db>__:K:i} of
 * its share in the fleet's division ({@link ShardWakeups#ownedShards}), follows the share after every seat renewal
 * and every {@link #CHECK_INTERVAL} (subscribing the shards it took over, each swept once its subscription is
 * confirmed, and unsubscribing those it handed over), so each write is decoded by one instance of the fleet.
 *
 * <p>Notifications are node-local, so on a Redis Cluster the relay subscribes on every master. Redis must have
 * {@code notify-keyspace-events} with {@code K} and {@code z} (or {@code A}); the relay sets them with
 * {@code CONFIG SET} only when {@code relay.wake.configure-redis=true}. Without them it falls back to polling at
 * max-idle and says, once, what to configure.
 *
 * <p>The flags are not a one-time fact: a Redis restart without them in redis.conf, a failover to a replica (CONFIG
 * SET is not replicated) or a new cluster master drops them, and a subscription that hears nothing looks just like
 * an idle one. So they are read again on every master every {@link #CHECK_INTERVAL} (one {@code CONFIG GET} per
 * master: 2 commands/s per master per relay instance). When they stopped anywhere: one WARN naming the fix, every
 * business polls at max-idle ({@link #onModeChange}) and is swept at once; when they are back: one INFO, keyspace
 * wake-ups again. On a cluster the topology is reloaded every {@value #TOPOLOGY_EVERY_CHECKS} checks and the
 * channels are subscribed again when masters were added (Lettuce does not subscribe nodes it learns of later).
 * <p>
 * Longer than 300 lines because it carries the standalone and the Cluster variant of every Redis call it makes
 * (pub/sub connection, head reads, the masters' flag checks through {@link NotificationFlags}) and the switch
 * between keyspace wake-ups and polling, so the rest of the relay sees one wake-up source.
 */
public final class KeyspaceWakeSource {

    private static final Logger log = LoggerFactory.getLogger(KeyspaceWakeSource.class);
    private static final String CONFIG = NotificationFlags.CONFIG;
    private static final byte[] ZADD = "zadd".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ZINCR = "zincr".getBytes(StandardCharsets.US_ASCII);
    /** Shards per business whose notifications are followed (more are swept only). */
    static final int MAX_SHARDS = 4096;

    /** How the relay may use keyspace notifications. */
    public enum Mode {
        /** Use them when Redis has them on (or set them on when allowed); otherwise poll at max-idle. */
        AUTO,
        /** Never: poll at max-idle. */
        OFF
    }

    /** Wake settings: mode, whether the relay may CONFIG SET, and the sweep interval while notifications work. */
    public record Settings(Mode mode, boolean configureRedis, Duration safetySweep) {}

    /**
     * How often the flags are read again on every master ({@code CONFIG GET}, one command per master): a Redis
     * restart without them in redis.conf, a failover or a new cluster master drops them, and this is how soon the
     * relay notices and polls instead.
     */
    static final Duration CHECK_INTERVAL = Duration.ofMillis(500);
    /**
     * A shard heard this often (notifications per second, averaged over each of {@link #BUSY_CHECKS} checks in a row,
     * {@link #CHECK_INTERVAL} apart) is polled instead: its channel is unsubscribed and the workers pop it every {@link #BUSY_POLL} whatever its pops report.
     * A notification costs the relay a wake-up of its Redis event loop and Redis a write to this connection; at this
     * rate the polls (most of which a due entry would have caused anyway) cost less.
     */
    static final int BUSY_PER_SECOND = 100;
    /** Checks in a row a shard must be that busy: a burst of writes is heard (peeks are cheap for a burst). */
    static final int BUSY_CHECKS = 2;
    /** How often a busy shard (see {@link #BUSY_PER_SECOND}) is popped: the most a write that is due at once waits. */
    static final Duration BUSY_POLL = Duration.ofMillis(10);
    /** How long a busy shard stays polled before it is heard again for one check, to see whether it still is. */
    static final Duration BUSY_RECHECK = Duration.ofSeconds(5);
    /** Checks between two reloads of a cluster's topology (to hear masters added since). */
    private static final int TOPOLOGY_EVERY_CHECKS = 20;

    private final RedisConnectionFactory connectionFactory;
    private final Settings settings;
    private final LongSupplier nowMs;
    private final List<Subscription> subscriptions = new CopyOnWriteArrayList<>();
    private final List<Consumer<Boolean>> modeListeners = new CopyOnWriteArrayList<>();
    private AbstractRedisClient client;
    private StatefulRedisPubSubConnection<byte[], byte[]> pubSub;
    private StatefulConnection<byte[], byte[]> heads;
    private NotificationFlags flags;
    private RedisSortedSetAsyncCommands<byte[], byte[]> headCommands;
    private ScheduledExecutorService timer;
    /** Runs the flag checks (apart from the peeks' timer: a check waits for Redis). */
    private ScheduledExecutorService checker;

    private volatile boolean active;
    /** Cluster masters the channel subscriptions were last sent to (node ids). */
    private volatile Set<String> subscribedMasters = Set.of();

    private int checksSinceTopology;

    /**
     * One business: its channels' common prefix (before the shard number), its peeks and the shards whose channels
     * are subscribed ({@code heard}, guarded by the source's lock).
     */
    private record Subscription(
            ShardWakeups wakeups,
            byte[] channelPrefix,
            ShardPeeks peeks,
            BitSet heard,
            AtomicIntegerArray notified,
            int[] busyChecks,
            BitSet busy,
            long[] busySinceNanos) {

        Subscription(ShardWakeups wakeups, byte[] channelPrefix, ShardPeeks peeks) {
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
    }

    /** {@code nowMs}: the estimated Redis time, epoch ms (a failed peek announces the shard due now). */
    public KeyspaceWakeSource(RedisConnectionFactory connectionFactory, Settings settings, LongSupplier nowMs) {
        this.connectionFactory = connectionFactory;
        this.settings = settings;
        this.nowMs = nowMs;
    }

    /** Whether notifications wake the workers now (so empty shards need only the safety sweep). */
    public boolean active() {
        return active;
    }

    /**
     * Calls {@code listener} with true when notifications work again on every master, false when they stopped
     * somewhere (after this, every subscribed business is swept: what was written meanwhile is found at once).
     */
    public void onModeChange(Consumer<Boolean> listener) {
        modeListeners.add(listener);
    }

    /**
     * Checks (and if allowed, sets) Redis' notification flags, connects, and from then on checks them every
     * {@link #CHECK_INTERVAL}; false means: poll at max-idle for now.
     */
    public boolean start() {
        if (settings.mode() == Mode.OFF) {
            log.info("relay.wake.keyspace-events=off: plain ZADD producers are picked up by polling at max-idle");
            return false;
        }
        if (!(connectionFactory instanceof LettuceConnectionFactory lettuce)) {
            warnFallback("the Redis client is not Lettuce (keyspace notifications need it)");
            return false;
        }
        try {
            client = lettuce.getNativeClient();
            flags = new NotificationFlags(client, settings.configureRedis());
            String missing = flags.check().missing();
            heads = connectHeads(client);
            timer = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-keyspace-peeks"));
            pubSub = connectPubSub(client);
            pubSub.addListener(new Listener());
            subscribedMasters = masters();
            active = missing == null;
            if (active) {
                log.info(
                        "keyspace notifications on: a ZADD by any producer wakes the relay; empty shards are swept "
                                + "every {}; the flags are checked every {}",
                        settings.safetySweep(),
                        CHECK_INTERVAL);
            } else {
                warnFallback(missing);
            }
            long ms = CHECK_INTERVAL.toMillis();
            checker = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-keyspace-checks"));
            checker.scheduleWithFixedDelay(this::recheck, ms, ms, TimeUnit.MILLISECONDS);
            return active;
        } catch (RuntimeException e) {
            warnFallback("checking them failed: " + Exceptions.rootMessage(e));
            close();
            return false;
        }
    }

    /**
     * Reads the flags on every master again (sets them when allowed), hears masters added to a cluster since, and
     * switches between keyspace wake-ups and polling: one WARN when they stopped, one INFO when they are back. A
     * check that cannot reach Redis changes nothing (the connection's own trouble is reported elsewhere).
     */
    private void recheck() {
        try {
            // busy shards are polled instead of heard (and heard again now and then, to see whether they still are)
            long nowNanos = System.nanoTime();
            subscriptions.forEach(s -> weighBusy(s, nowNanos));
            // a share also changes without a renewal (after a whole seat TTL without one, every shard) and with the
            // shard count: this is the bound on how late the channels follow it
            subscriptions.forEach(this::heedShare);
            if (client instanceof RedisClusterClient cluster && ++checksSinceTopology >= TOPOLOGY_EVERY_CHECKS) {
                checksSinceTopology = 0;
                cluster.refreshPartitions();
                subscribeNewMasters();
            }
            NotificationFlags.Check check = flags.check();
            String missing = check.missing();
            boolean on = missing == null;
            if (on == active) {
                if (on && check.setAgain()) {
                    // they were gone for up to one check: whatever was written meanwhile is found by a sweep
                    subscriptions.forEach(sub -> sub.wakeups().sweepAll());
                }
                return;
            }
            active = on;
            if (on) {
                log.info("keyspace notifications are on again on every master: a ZADD by any producer wakes the relay "
                        + "again; polling at max-idle stops");
            } else {
                log.warn(
                        "keyspace notifications stopped ({}; a Redis restart without the setting in redis.conf, a "
                                + "failover or a new cluster master): polling every max-idle until they are back. Fix: "
                                + "put '{} Kz' in redis.conf of every master (and replica), or run CONFIG SET {} Kz "
                                + "on each, or set relay.wake.configure-redis=true",
                        missing,
                        CONFIG,
                        CONFIG);
            }
            for (Consumer<Boolean> listener : modeListeners) {
                try {
                    listener.accept(on);
                } catch (RuntimeException e) {
                    log.debug("a wake mode listener failed", e);
                }
            }
            subscriptions.forEach(sub -> sub.wakeups().sweepAll());
        } catch (RuntimeException e) {
            log.debug("checking the keyspace notification flags failed: {}", Exceptions.rootMessage(e));
        }
    }

    /** The cluster's masters as the pub/sub connection knows them (node ids); empty on a single Redis. */
    private Set<String> masters() {
        if (!(pubSub instanceof StatefulRedisClusterPubSubConnection<byte[], byte[]> cluster)) {
            return Set.of();
        }
        Set<String> ids = new HashSet<>();
        for (RedisClusterNode node : cluster.getPartitions()) {
            if (node.is(RedisClusterNode.NodeFlag.UPSTREAM)) {
                ids.add(node.getNodeId());
            }
        }
        return ids;
    }

    /**
     * A master added to the cluster since the channels were subscribed hears nothing (Lettuce subscribes the
     * masters it knew): subscribe them again on every master; each confirmation sweeps its shard.
     */
    private void subscribeNewMasters() {
        Set<String> now = masters();
        if (now.equals(subscribedMasters) || subscribedMasters.containsAll(now)) {
            subscribedMasters = now;
            return;
        }
        log.info(
                "Redis Cluster masters changed ({} -> {}): subscribing the keyspace channels on every master",
                subscribedMasters.size(),
                now.size());
        subscribedMasters = now;
        synchronized (this) {
            for (Subscription s : subscriptions) {
                if (!s.heard().isEmpty()) {
                    subscribe(s.channels(s.heard()));
                }
            }
        }
    }

    private StatefulRedisPubSubConnection<byte[], byte[]> connectPubSub(AbstractRedisClient client) {
        if (client instanceof RedisClusterClient cluster) {
            StatefulRedisClusterPubSubConnection<byte[], byte[]> c = cluster.connectPubSub(ByteArrayCodec.INSTANCE);
            // Keyspace notifications are local to the node that holds the key: hear every master's.
            c.setNodeMessagePropagation(true);
            return c;
        }
        return ((RedisClient) client).connectPubSub(ByteArrayCodec.INSTANCE);
    }

    /** The connection the peeks read shard heads on (async: answers complete on the event loop). */
    private StatefulConnection<byte[], byte[]> connectHeads(AbstractRedisClient client) {
        if (client instanceof RedisClusterClient cluster) {
            var c = cluster.connect(ByteArrayCodec.INSTANCE);
            headCommands = c.async();
            return c;
        }
        StatefulRedisConnection<byte[], byte[]> c = ((RedisClient) client).connect(ByteArrayCodec.INSTANCE);
        c.sync().select(database());
        headCommands = c.async();
        return c;
    }

    /** The earliest score of a shard key, {@link ShardWakeups#NONE} when it is empty. */
    private CompletionStage<Long> earliest(byte[] key) {
        return headCommands
                .zrangeWithScores(key, 0, 0)
                .thenApply(head -> head.isEmpty()
                        ? ShardWakeups.NONE
                        : ShardPeeks.dueMs(((ScoredValue<byte[]>) head.get(0)).getScore()));
    }

    private void warnFallback(String why) {
        log.warn(
                "keyspace notifications unavailable ({}): entries written without the relay-api's wake-up "
                        + "(e.g. a plain ZADD) are picked up by polling every max-idle. To be woken within milliseconds, "
                        + "run CONFIG SET {} Kz on Redis (every master of a cluster; or put '{} Kz' in redis.conf), "
                        + "or set relay.wake.configure-redis=true to let the relay do it; relay.wake.keyspace-events=off "
                        + "silences this",
                why,
                CONFIG,
                CONFIG);
    }

    private int database() {
        return connectionFactory instanceof LettuceConnectionFactory lettuce ? lettuce.getDatabase() : 0;
    }

    /**
     * Starts hearing the shard keys of a business ({@code keys}) that this instance pops, telling {@code wakeups} what
     * they announce; {@link #follow} keeps the channels in step with the shards it pops.
     */
    public void subscribe(DelayQueueKeys keys, ShardWakeups wakeups) {
        if (pubSub == null) {
            return;
        }
        ShardPeeks peeks = new ShardPeeks(
                MAX_SHARDS,
                shard -> earliest(keys.shardKeyBytes(shard)[DelayQueueKeys.SHARD]),
                (shard, dueMs) -> wakeups.announce(shard, dueMs == Long.MIN_VALUE ? nowMs.getAsLong() : dueMs),
                shard -> wakeups.popsWithin(shard, ShardPeeks.WINDOW_MS),
                timer,
                System::nanoTime);
        String prefix = keys.shard(0);
        prefix = prefix.substring(0, prefix.length() - 1);
        Subscription s =
                new Subscription(wakeups, DelayQueueKeys.bytes("__keyspace@" + database() + "__:" + prefix), peeks);
        subscriptions.add(s);
        heedShare(s);
    }

    /**
     * Subscribes the keyspace channels of the shards {@code wakeups} pops now and unsubscribes the others (its share
     * in the fleet's division changed, or its shard count). Called after every seat renewal and every flag check; a
     * channel newly subscribed sweeps its shard once its subscription is confirmed ({@link Listener#subscribed}).
     */
    public void follow(ShardWakeups wakeups) {
        for (Subscription s : subscriptions) {
            if (s.wakeups() == wakeups) {
                heedShare(s);
            }
        }
    }

    private synchronized void heedShare(Subscription s) {
        if (pubSub == null || !subscriptions.contains(s)) {
            return;
        }
        BitSet owned = s.wakeups().ownedShards();
        owned.clear(MAX_SHARDS, Math.max(MAX_SHARDS, owned.length()));
        // a busy shard that is no longer this instance's is no longer polled here either
        BitSet released = (BitSet) s.busy().clone();
        released.andNot(owned);
        for (int shard = released.nextSetBit(0); shard >= 0; shard = released.nextSetBit(shard + 1)) {
            s.busy().clear(shard);
            s.wakeups().pollEvery(shard, 0);
        }
        BitSet wanted = (BitSet) owned.clone();
        wanted.andNot(s.busy());
        BitSet added = (BitSet) wanted.clone();
        added.andNot(s.heard());
        BitSet dropped = (BitSet) s.heard().clone();
        dropped.andNot(wanted);
        if (!dropped.isEmpty()) {
            unsubscribe(s.channels(dropped));
            s.heard().andNot(dropped);
        }
        if (!added.isEmpty()) {
            subscribe(s.channels(added));
            s.heard().or(added);
            // heard again (its subscription is confirmed): popped as its pops report, and swept once (subscribed)
            for (int shard = added.nextSetBit(0); shard >= 0; shard = added.nextSetBit(shard + 1)) {
                s.wakeups().pollEvery(shard, 0);
            }
        }
    }

    /**
     * Marks the heard shards notified at least {@link #BUSY_PER_SECOND} times a second in each of the last
     * {@link #BUSY_CHECKS} checks busy (the
     * workers poll them from now on, before their channels are unsubscribed by {@link #heedShare}), and the shards
     * busy for {@link #BUSY_RECHECK} heard again for a check, to see whether they still are.
     */
    private synchronized void weighBusy(Subscription s, long nowNanos) {
        if (!active) {
            return;
        }
        long busyAt = BUSY_PER_SECOND * CHECK_INTERVAL.toMillis() / 1000;
        for (int shard = s.heard().nextSetBit(0); shard >= 0; shard = s.heard().nextSetBit(shard + 1)) {
            boolean busyNow = s.notified().getAndSet(shard, 0) >= busyAt;
            s.busyChecks()[shard] = busyNow ? s.busyChecks()[shard] + 1 : 0;
            if (s.busyChecks()[shard] >= BUSY_CHECKS) {
                s.busyChecks()[shard] = 0;
                s.busy().set(shard);
                s.busySinceNanos()[shard] = nowNanos;
                s.wakeups().pollEvery(shard, BUSY_POLL.toMillis());
            }
        }
        for (int shard = s.busy().nextSetBit(0); shard >= 0; shard = s.busy().nextSetBit(shard + 1)) {
            if (nowNanos - s.busySinceNanos()[shard] >= BUSY_RECHECK.toNanos()) {
                s.busy().clear(shard);
                s.notified().set(shard, 0);
            }
        }
    }

    /** The shards of {@code wakeups} polled instead of heard because they are busy (tests). */
    synchronized BitSet busy(ShardWakeups wakeups) {
        for (Subscription s : subscriptions) {
            if (s.wakeups() == wakeups) {
                return (BitSet) s.busy().clone();
            }
        }
        return new BitSet();
    }

    /** Stops hearing the shard keys of the business behind {@code wakeups}. */
    public synchronized void unsubscribe(ShardWakeups wakeups) {
        if (pubSub == null) {
            return;
        }
        for (Subscription s : subscriptions) {
            if (s.wakeups() == wakeups) {
                subscriptions.remove(s);
                if (!s.heard().isEmpty()) {
                    unsubscribe(s.channels(s.heard()));
                }
            }
        }
    }

    /** The keyspace channels {@code wakeups} hears now (tests). */
    synchronized BitSet heard(ShardWakeups wakeups) {
        for (Subscription s : subscriptions) {
            if (s.wakeups() == wakeups) {
                return (BitSet) s.heard().clone();
            }
        }
        return new BitSet();
    }

    private void subscribe(byte[][] channels) {
        if (pubSub instanceof StatefulRedisClusterPubSubConnection<byte[], byte[]> cluster) {
            cluster.sync().upstream().commands().subscribe(channels);
        } else {
            pubSub.sync().subscribe(channels);
        }
    }

    private void unsubscribe(byte[][] channels) {
        if (pubSub instanceof StatefulRedisClusterPubSubConnection<byte[], byte[]> cluster) {
            cluster.sync().upstream().commands().unsubscribe(channels);
        } else {
            pubSub.sync().unsubscribe(channels);
        }
    }

    public void close() {
        active = false;
        for (ScheduledExecutorService executor : new ScheduledExecutorService[] {checker, timer}) {
            if (executor != null) {
                executor.shutdownNow();
            }
        }
        for (AutoCloseable c : new AutoCloseable[] {pubSub, heads, flags}) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    log.debug("closing a keyspace notification connection failed", e);
                }
            }
        }
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

    private final class Listener extends RedisPubSubAdapter<byte[], byte[]> {

        @Override
        public void message(byte[] channel, byte[] event) {
            boolean write = Arrays.equals(ZADD, event) || Arrays.equals(ZINCR, event);
            for (Subscription s : subscriptions) {
                int shard = shardOf(channel, s.channelPrefix(), s.peeks().maxShards());
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
         * After every (re)subscription of a shard's channel (a shard newly this instance's, a reconnect, a new
         * cluster master) the workers pop that shard: notifications may have been lost meanwhile.
         */
        @Override
        public void subscribed(byte[] channel, long count) {
            for (Subscription s : subscriptions) {
                int shard = shardOf(channel, s.channelPrefix(), s.peeks().maxShards());
                if (shard >= 0) {
                    s.wakeups().announce(shard, nowMs.getAsLong());
                    return;
                }
            }
        }
    }
}
