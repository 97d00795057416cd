package io.delayrelay.app.engine.wake;

import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Redis' {@code notify-keyspace-events} on every master, read (and set, when {@code relay.wake.configure-redis}
 * allows it). {@link KeyspaceWakeSource} checks them at start and then every half second: a Redis restart without
 * them in redis.conf, a failover or a new cluster master drops them silently.
 */
final class NotificationFlags {

    private static final Logger log = LoggerFactory.getLogger(NotificationFlags.class);
    static final String CONFIG = "notify-keyspace-events";

    private final KeyspaceConnection connection;
    private final boolean configureRedis;

    /**
     * What one check found.
     *
     * @param missing  null when every master has K and z (or A); else what they have
     * @param setAgain whether the check had to set them (they were gone: writes since were not notified)
     */
    record Check(String missing, boolean setAgain) {}

    NotificationFlags(KeyspaceConnection connection, boolean configureRedis) {
        this.configureRedis = configureRedis;
        this.connection = connection;
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
        return connection.configGet(CONFIG);
    }

    private void write(String value) {
        connection.configSet(CONFIG, value);
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
}
