package io.delayrelay.app.ops;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;

/**
 * Checks at start that Redis will keep what the relay stores: an {@code allkeys-*} eviction policy may drop
 * scheduled entries, payloads or dead letters without a trace, and without AOF a Redis restart loses what was
 * written since the last snapshot. Reads {@code INFO memory} and {@code INFO persistence} (the relay's ACL allows
 * INFO; CONFIG GET would also reveal secrets) and WARNs; it never stops the relay.
 */
public class RedisGuardrails implements ApplicationListener<ApplicationReadyEvent> {

    private static final Logger log = LoggerFactory.getLogger(RedisGuardrails.class);

    private final RedisTemplate<byte[], byte[]> redis;

    public RedisGuardrails(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    @Override
    public void onApplicationEvent(ApplicationReadyEvent event) {
        check();
    }

    /** Logs and returns the warnings for the connected Redis; none when INFO cannot be read (logged too). */
    public List<String> check() {
        Properties memory;
        Properties persistence;
        try {
            memory = redis.execute(
                    (RedisCallback<Properties>) c -> c.serverCommands().info("memory"));
            persistence = redis.execute(
                    (RedisCallback<Properties>) c -> c.serverCommands().info("persistence"));
        } catch (RuntimeException e) {
            log.info(
                    "could not read Redis INFO to check its eviction policy and persistence ({}): make sure it runs"
                            + " with maxmemory-policy noeviction and appendonly yes",
                    e.toString());
            return List.of();
        }
        List<String> warnings = warnings(memory, persistence);
        warnings.forEach(log::warn);
        return warnings;
    }

    /** What is unsafe in these INFO sections. */
    static List<String> warnings(Properties memory, Properties persistence) {
        List<String> warnings = new ArrayList<>();
        String policy = value(memory, "maxmemory_policy");
        if (policy != null && policy.startsWith("allkeys-")) {
            warnings.add("Redis maxmemory-policy is " + policy + ": when Redis reaches maxmemory ("
                    + value(memory, "maxmemory_human") + ") it may evict scheduled entries, payloads and dead letters"
                    + " without a trace. Set maxmemory-policy noeviction (writes then fail loudly instead).");
        }
        if ("0".equals(value(persistence, "aof_enabled"))) {
            warnings.add("Redis AOF is off (appendonly no): a Redis restart loses the entries written since the last"
                    + " RDB snapshot, or all of them without snapshots. Set appendonly yes and appendfsync everysec.");
        }
        return warnings;
    }

    private static String value(Properties info, String key) {
        if (info == null) {
            return null;
        }
        String v = info.getProperty(key);
        return v == null ? null : v.trim();
    }
}
