package io.delayrelay.app.engine;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shards set aside because their keys hold something the scripts cannot work on (written by another program).
 * Their entries stay where they are; a shard is tried again after {@link #QUARANTINE_MS}, and logged each time.
 * Measured on a monotonic clock (nanos), so a host clock step neither ends nor stretches a quarantine.
 */
final class ShardQuarantine {

    private static final Logger log = LoggerFactory.getLogger(ShardQuarantine.class);

    /** How long a shard whose keys hold the wrong data type is skipped before it is tried again. */
    static final long QUARANTINE_MS = 30_000;

    private final LongSupplier nanoClock;
    private final Map<Integer, Long> untilNanos = new ConcurrentHashMap<>();

    ShardQuarantine(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    /**
     * An error caused by what one shard's keys hold (e.g. another program wrote a string where the shard's zset
     * belongs), as opposed to a connection problem: only that shard is set aside, the worker goes on.
     */
    static boolean isShardDataError(String cause) {
        return cause != null && cause.contains("WRONGTYPE");
    }

    void quarantine(BusinessSpec spec, int shard, String cause) {
        untilNanos.put(shard, nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(QUARANTINE_MS));
        log.error(
                "business={} shard={}: shard keys hold unexpected data ({}); skipping this shard for {} s. "
                        + "Fix or remove the offending key ({} must be a zset, {} a zset, {} a hash)",
                spec.name(),
                shard,
                cause,
                QUARANTINE_MS / 1000,
                spec.keys().shard(shard),
                spec.keys().inflight(shard),
                spec.keys().payloads(shard));
    }

    boolean isQuarantined(int shard) {
        Long until = untilNanos.get(shard);
        if (until == null) {
            return false;
        }
        if (nanoClock.getAsLong() - until >= 0) {
            untilNanos.remove(shard, until);
            return false;
        }
        return true;
    }

    Set<Integer> shards() {
        return untilNanos.keySet().stream().filter(this::isQuarantined).collect(Collectors.toSet());
    }
}
