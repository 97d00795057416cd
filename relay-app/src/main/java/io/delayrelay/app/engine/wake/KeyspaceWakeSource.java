package io.delayrelay.app.engine.wake;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.support.Exceptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * Redis keyspace notifications as the wake source: a {@code zadd} on a shard key, by any producer, makes the relay
 * peek that shard's earliest score ({@link ShardPeeks}), and the workers pop the shard when that entry falls due. A
 * notification is only a signal, never storage: a lost one costs at most one safety sweep. Only the shards this
 * instance pops are heard, and the flags Redis needs are checked again every {@link #CHECK_INTERVAL}; without them
 * the relay polls at max-idle. Redis calls go through a {@link KeyspaceConnection}, single Redis or cluster alike.
 */
public final class KeyspaceWakeSource {

    private static final Logger log = LoggerFactory.getLogger(KeyspaceWakeSource.class);
    private static final String CONFIG = NotificationFlags.CONFIG;

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
    /** Checks between two reloads of a cluster's topology (to hear masters added since). */
    private static final int TOPOLOGY_EVERY_CHECKS = 20;

    private final RedisConnectionFactory connectionFactory;
    private final Settings settings;
    private final LongSupplier nowMs;
    private final List<KeyspaceSubscription> subscriptions = new CopyOnWriteArrayList<>();
    private final List<Consumer<Boolean>> modeListeners = new CopyOnWriteArrayList<>();
    /** Null until started, and when the source polls for good (off, not Lettuce, or the first check failed). */
    private volatile KeyspaceConnection redis;

    private NotificationFlags flags;
    private ScheduledExecutorService timer;
    /** Runs the flag checks (apart from the peeks' timer: a check waits for Redis). */
    private ScheduledExecutorService checker;

    private volatile boolean active;
    /** Cluster masters the channel subscriptions were last sent to (node ids). */
    private volatile Set<String> subscribedMasters = Set.of();

    private int checksSinceTopology;

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
        if (!KeyspaceConnection.supports(connectionFactory)) {
            warnFallback("the Redis client is not Lettuce (keyspace notifications need it)");
            return false;
        }
        try {
            KeyspaceConnection opened =
                    KeyspaceConnection.open(connectionFactory, new Notifications(subscriptions, nowMs));
            redis = opened;
            flags = new NotificationFlags(opened, settings.configureRedis());
            String missing = flags.check().missing();
            timer = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-keyspace-peeks"));
            subscribedMasters = opened.masters();
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
            redis = null;
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
            if (++checksSinceTopology >= TOPOLOGY_EVERY_CHECKS) {
                // masters added to a cluster since are heard too (nothing changes on a single Redis)
                checksSinceTopology = 0;
                redis.refreshTopology();
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

    /**
     * A master added to the cluster since the channels were subscribed hears nothing (Lettuce subscribes the
     * masters it knew): subscribe them again on every master; each confirmation sweeps its shard.
     */
    private void subscribeNewMasters() {
        Set<String> now = redis.masters();
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
            subscriptions.forEach(s -> s.subscribeAgain(redis));
        }
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

    /**
     * Starts hearing the shard keys of a business ({@code keys}) that this instance pops, telling {@code wakeups} what
     * they announce; {@link #follow} keeps the channels in step with the shards it pops.
     */
    public void subscribe(DelayQueueKeys keys, ShardWakeups wakeups) {
        KeyspaceConnection connection = redis;
        if (connection == null) {
            return;
        }
        ShardPeeks peeks = new ShardPeeks(
                KeyspaceSubscription.MAX_SHARDS,
                shard -> connection.headOf(keys.shardKeyBytes(shard)[DelayQueueKeys.SHARD]),
                (shard, dueMs) -> wakeups.announce(shard, dueMs == Long.MIN_VALUE ? nowMs.getAsLong() : dueMs),
                shard -> wakeups.popsWithin(shard, ShardPeeks.WINDOW_MS),
                timer,
                System::nanoTime);
        String prefix = keys.shard(0);
        prefix = prefix.substring(0, prefix.length() - 1);
        byte[] channelPrefix = DelayQueueKeys.bytes("__keyspace@" + connection.database() + "__:" + prefix);
        KeyspaceSubscription s = new KeyspaceSubscription(wakeups, channelPrefix, peeks);
        subscriptions.add(s);
        heedShare(s);
    }

    /**
     * Subscribes the keyspace channels of the shards {@code wakeups} pops now and unsubscribes the others (its share
     * in the fleet's division changed, or its shard count). Called after every seat renewal and every flag check; a
     * channel newly subscribed sweeps its shard once its subscription is confirmed ({@link Notifications#subscribed}).
     */
    public void follow(ShardWakeups wakeups) {
        for (KeyspaceSubscription s : subscriptions) {
            if (s.wakeups() == wakeups) {
                heedShare(s);
            }
        }
    }

    private synchronized void heedShare(KeyspaceSubscription s) {
        KeyspaceConnection connection = redis;
        if (connection != null && subscriptions.contains(s)) {
            s.follow(connection);
        }
    }

    /** Busy shards are polled instead of heard while notifications work ({@link KeyspaceSubscription#weighBusy}). */
    private synchronized void weighBusy(KeyspaceSubscription s, long nowNanos) {
        if (active) {
            s.weighBusy(nowNanos, CHECK_INTERVAL.toMillis());
        }
    }

    /** Stops hearing the shard keys of the business behind {@code wakeups}. */
    public synchronized void unsubscribe(ShardWakeups wakeups) {
        if (redis == null) {
            return;
        }
        for (KeyspaceSubscription s : subscriptions) {
            if (s.wakeups() == wakeups) {
                subscriptions.remove(s);
                s.unsubscribeAll(redis);
            }
        }
    }

    public void close() {
        active = false;
        for (ScheduledExecutorService executor : new ScheduledExecutorService[] {checker, timer}) {
            if (executor != null) {
                executor.shutdownNow();
            }
        }
        if (redis != null) {
            redis.close();
        }
    }
}
