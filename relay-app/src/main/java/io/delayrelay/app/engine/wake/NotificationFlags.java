package io.delayrelay.app.engine.wake;

import java.util.ArrayList;
import java.util.List;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Redis' {@code notify-keyspace-events} on every master, read (and set, when {@code relay.wake.configure-redis}
 * allows it) on one connection kept for it: {@link KeyspaceWakeSource} checks them at start and then every half
 * second, because a Redis restart without them in redis.conf, a failover or a new cluster master drops them
 * silently. On a cluster the masters are those the client knows now ({@code upstream()}).
 */
final class NotificationFlags implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(NotificationFlags.class);
    static final String CONFIG = "notify-keyspace-events";

    private final StatefulConnection<String, String> connection;
    private final boolean configureRedis;

    /**
     * What one check found.
     *
     * @param missing  null when every master has K and z (or A); else what they have
     * @param setAgain whether the check had to set them (they were gone: writes since were not notified)
     */
    record Check(String missing, boolean setAgain) {}

    NotificationFlags(AbstractRedisClient client, boolean configureRedis) {
        this.configureRedis = configureRedis;
        this.connection = client instanceof RedisClusterClient cluster
                ? cluster.connect(StringCodec.UTF8)
                : ((RedisClient) client).connect(StringCodec.UTF8);
    }

    /** Reads the flags on every master (one CONFIG GET each), setting them first when missing and allowed. */
    Check check() {
        List<String> values = read();
        boolean set = false;
        if (!values.stream().allMatch(NotificationFlags::hasFlags) && configureRedis) {
            write(withFlags(values.get(0)));
            log.info(
                    "set Redis {} from '{}' to include K and z (relay.wake.configure-redis=true)",
                    CONFIG,
                    String.join("', '", values));
            set = true;
            values = read();
        }
        if (values.stream().allMatch(NotificationFlags::hasFlags)) {
            return new Check(null, set);
        }
        return new Check("Redis has " + CONFIG + "='" + String.join("', '", values) + "', which lacks K and z", set);
    }

    private List<String> read() {
        List<String> values = new ArrayList<>();
        if (connection instanceof StatefulRedisClusterConnection<String, String> cluster) {
            cluster.sync().upstream().commands().configGet(CONFIG).forEach(m -> values.add(m.getOrDefault(CONFIG, "")));
        } else {
            values.add(single().sync().configGet(CONFIG).getOrDefault(CONFIG, ""));
        }
        return values;
    }

    private void write(String value) {
        if (connection instanceof StatefulRedisClusterConnection<String, String> cluster) {
            cluster.sync().upstream().commands().configSet(CONFIG, value);
        } else {
            single().sync().configSet(CONFIG, value);
        }
    }

    @SuppressWarnings("unchecked")
    private StatefulRedisConnection<String, String> single() {
        return (StatefulRedisConnection<String, String>) connection;
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

    @Override
    public void close() {
        connection.close();
    }
}
