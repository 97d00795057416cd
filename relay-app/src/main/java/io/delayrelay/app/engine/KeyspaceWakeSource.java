package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Redis keyspace notifications as the wake source: a {@code zadd} on a shard key {@code K:i}, written by any
 * producer (even {@code redis-cli ZADD}), wakes the business's workers for that shard within milliseconds. A
 * notification is only a signal, never storage: a lost one costs at most one safety sweep.
 *
 * <p>Notifications are node-local, so on a Redis Cluster the relay subscribes on every master. Redis must have
 * {@code notify-keyspace-events} with {@code K} and {@code z} (or {@code A}); the relay sets them with
 * {@code CONFIG SET} only when {@code relay.wake.configure-redis=true}. Without them it falls back to polling at
 * max-idle and says, once, what to configure.
 */
public final class KeyspaceWakeSource {

    private static final Logger log = LoggerFactory.getLogger(KeyspaceWakeSource.class);
    static final String CONFIG = "notify-keyspace-events";
    /** Wake-ups for one shard are at least this far apart: a burst of writes costs one check, not one each. */
    static final long COALESCE_MS = 5;

    /** How the relay may use keyspace notifications. */
    public enum Mode {
        /** Use them when Redis has them on (or set them on when allowed); otherwise poll at max-idle. */
        AUTO,
        /** Never: poll at max-idle. */
        OFF
    }

    /** Wake settings: mode, whether the relay may CONFIG SET, and the sweep interval while notifications work. */
    public record Settings(Mode mode, boolean configureRedis, Duration safetySweep) {}

    private final RedisConnectionFactory connectionFactory;
    private final Settings settings;
    private final RedisClock clock;
    private final Map<String, Subscription> byPattern = new ConcurrentHashMap<>();
    private StatefulRedisPubSubConnection<String, String> pubSub;
    private volatile boolean active;

    private record Subscription(BusinessRelay relay, String prefix, AtomicLongArray lastWakeMs) {}

    KeyspaceWakeSource(RedisConnectionFactory connectionFactory, Settings settings, RedisClock clock) {
        this.connectionFactory = connectionFactory;
        this.settings = settings;
        this.clock = clock;
    }

    /** Whether notifications wake the workers (so empty shards need only the safety sweep). */
    boolean active() {
        return active;
    }

    /** Checks (and if allowed, sets) Redis' notification flags and connects; false means: poll at max-idle. */
    boolean start() {
        if (settings.mode() == Mode.OFF) {
            log.info("relay.wake.keyspace-events=off: plain ZADD producers are picked up by polling at max-idle");
            return false;
        }
        if (!(connectionFactory instanceof LettuceConnectionFactory lettuce)) {
            warnFallback("the Redis client is not Lettuce (keyspace notifications need it)");
            return false;
        }
        try {
            AbstractRedisClient client = lettuce.getNativeClient();
            String missing = checkFlags(client);
            if (missing != null) {
                warnFallback(missing);
                return false;
            }
            pubSub = connectPubSub(client);
            pubSub.addListener(new Listener());
            active = true;
            log.info(
                    "keyspace notifications on: a ZADD by any producer wakes the relay; empty shards are swept "
                            + "every {}",
                    settings.safetySweep());
            return true;
        } catch (RuntimeException e) {
            warnFallback("checking them failed: " + AmqpBatchPublisher.rootMessage(e));
            close();
            return false;
        }
    }

    /**
     * Returns null when every master has K and z (or A) in notify-keyspace-events, after setting them when
     * allowed; else what is missing.
     */
    private String checkFlags(AbstractRedisClient client) {
        List<String> values = new ArrayList<>();
        if (client instanceof RedisClusterClient cluster) {
            try (StatefulRedisClusterConnection<String, String> c = cluster.connect(StringCodec.UTF8)) {
                c.sync().upstream().commands().configGet(CONFIG).forEach(m -> values.add(m.getOrDefault(CONFIG, "")));
                if (!values.stream().allMatch(KeyspaceWakeSource::hasFlags) && settings.configureRedis()) {
                    c.sync().upstream().commands().configSet(CONFIG, withFlags(values.get(0)));
                    values.clear();
                    c.sync()
                            .upstream()
                            .commands()
                            .configGet(CONFIG)
                            .forEach(m -> values.add(m.getOrDefault(CONFIG, "")));
                }
            }
        } else {
            try (StatefulRedisConnection<String, String> c = ((RedisClient) client).connect(StringCodec.UTF8)) {
                c.sync().select(database());
                String value = c.sync().configGet(CONFIG).getOrDefault(CONFIG, "");
                if (!hasFlags(value) && settings.configureRedis()) {
                    c.sync().configSet(CONFIG, withFlags(value));
                    log.info(
                            "set Redis {} from '{}' to '{}' (relay.wake.configure-redis=true)",
                            CONFIG,
                            value,
                            withFlags(value));
                    value = c.sync().configGet(CONFIG).getOrDefault(CONFIG, "");
                }
                values.add(value);
            }
        }
        if (values.stream().allMatch(KeyspaceWakeSource::hasFlags)) {
            return null;
        }
        return "Redis has " + CONFIG + "='" + String.join("', '", values) + "', which lacks K and z";
    }

    private StatefulRedisPubSubConnection<String, String> connectPubSub(AbstractRedisClient client) {
        if (client instanceof RedisClusterClient cluster) {
            StatefulRedisClusterPubSubConnection<String, String> c = cluster.connectPubSub(StringCodec.UTF8);
            // Keyspace notifications are local to the node that holds the key: hear every master's.
            c.setNodeMessagePropagation(true);
            return c;
        }
        return ((RedisClient) client).connectPubSub(StringCodec.UTF8);
    }

    static boolean hasFlags(String value) {
        return value.contains("K") && (value.contains("z") || value.contains("A"));
    }

    static String withFlags(String value) {
        String flags = value;
        if (!flags.contains("K")) {
            flags += "K";
        }
        if (!flags.contains("z") && !flags.contains("A")) {
            flags += "z";
        }
        return flags;
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

    /** Starts hearing a business's shard keys. */
    void subscribe(BusinessRelay relay) {
        if (!active) {
            return;
        }
        String prefix = relay.spec().keys().shard(0);
        prefix = prefix.substring(0, prefix.length() - 1);
        String pattern = "__keyspace@" + database() + "__:" + escape(prefix) + "[0-9]*";
        byPattern.put(
                pattern,
                new Subscription(relay, "__keyspace@" + database() + "__:" + prefix, new AtomicLongArray(4096)));
        psubscribe(pattern);
    }

    /** Stops hearing a business's shard keys. */
    void unsubscribe(BusinessRelay relay) {
        if (!active) {
            return;
        }
        byPattern.entrySet().removeIf(e -> {
            if (e.getValue().relay() == relay) {
                punsubscribe(e.getKey());
                return true;
            }
            return false;
        });
    }

    private void psubscribe(String pattern) {
        if (pubSub instanceof StatefulRedisClusterPubSubConnection<String, String> cluster) {
            cluster.sync().upstream().commands().psubscribe(pattern);
        } else {
            pubSub.sync().psubscribe(pattern);
        }
    }

    private void punsubscribe(String pattern) {
        if (pubSub instanceof StatefulRedisClusterPubSubConnection<String, String> cluster) {
            cluster.sync().upstream().commands().punsubscribe(pattern);
        } else {
            pubSub.sync().punsubscribe(pattern);
        }
    }

    /** Glob-escapes a key prefix for PSUBSCRIBE. */
    static String escape(String literal) {
        return literal.replaceAll("([\\\\*?\\[\\]])", "\\\\$1");
    }

    void close() {
        active = false;
        if (pubSub != null) {
            try {
                pubSub.close();
            } catch (RuntimeException e) {
                log.debug("closing the keyspace notification connection failed", e);
            }
        }
    }

    private final class Listener extends RedisPubSubAdapter<String, String> {

        @Override
        public void message(String pattern, String channel, String event) {
            if (!"zadd".equals(event) && !"zincr".equals(event)) {
                return;
            }
            Subscription s = byPattern.get(pattern);
            if (s == null || !channel.startsWith(s.prefix())) {
                return;
            }
            int shard;
            try {
                shard = Integer.parseInt(channel, s.prefix().length(), channel.length(), 10);
            } catch (NumberFormatException e) {
                return;
            }
            if (shard < 0 || shard >= s.lastWakeMs().length()) {
                return;
            }
            // At most one wake-up per shard per COALESCE_MS: a later one in the window is booked at its end
            // (the shard schedule keeps it), so nothing written in a burst is overlooked.
            long now = clock.nowMs();
            long last = s.lastWakeMs().get(shard);
            if (last > now) {
                return; // a wake-up is already booked for later in the window: it covers this write
            }
            long at = Math.max(now, last + COALESCE_MS);
            s.lastWakeMs().set(shard, at);
            s.relay().wake(shard, at);
        }

        /** After every (re)subscription the workers sweep every shard: notifications may have been lost meanwhile. */
        @Override
        public void psubscribed(String pattern, long count) {
            Subscription s = byPattern.get(pattern);
            if (s != null) {
                s.relay().sweepAll();
            }
        }
    }
}
