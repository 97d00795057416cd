package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import io.delayrelay.api.internal.ShardTopology;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;

/**
 * The producer's cache of each business's shard topology ({@code K:meta}): the shard count new entries hash into,
 * and the shards earlier counts may have left entries in. A reading is kept for the meta-cache TTL, so a write costs
 * no extra round trip; the default shard count stands in until the relay has written one.
 */
final class TopologyCache {

    private static final Logger log = LoggerFactory.getLogger(RedisDelayedMessageProducer.class);

    private final RedisTemplate<byte[], byte[]> redis;
    private final int defaultShards;
    private final long metaCacheTtlNanos;
    private final LongSupplier nanoClock;
    private final Map<String, CachedTopology> topologies = new ConcurrentHashMap<>();

    TopologyCache(
            RedisTemplate<byte[], byte[]> redis, int defaultShards, long metaCacheTtlNanos, LongSupplier nanoClock) {
        this.redis = redis;
        this.defaultShards = defaultShards;
        this.metaCacheTtlNanos = metaCacheTtlNanos;
        this.nanoClock = nanoClock;
    }

    /** The business's topology: the cached reading while it is younger than the TTL, else a fresh one. */
    ShardTopology topology(String business, DelayQueueKeys keys) {
        long now = nanoClock.getAsLong();
        CachedTopology cached = topologies.get(business);
        if (cached != null && now - cached.readAtNanos < metaCacheTtlNanos) {
            return cached.topology;
        }
        ShardTopology fresh = readTopology(business, keys);
        topologies.put(business, new CachedTopology(fresh, now));
        return fresh;
    }

    private ShardTopology readTopology(String business, DelayQueueKeys keys) {
        byte[] metaKey = DelayQueueKeys.bytes(keys.meta());
        List<byte[]> fields = redis.execute((RedisCallback<List<byte[]>>) connection -> connection
                .hashCommands()
                .hMGet(
                        metaKey,
                        DelayQueueKeys.bytes(MetaFields.SHARDS),
                        DelayQueueKeys.bytes(MetaFields.DRAINING),
                        DelayQueueKeys.bytes(MetaFields.HISTORY)));
        byte[] shardsField = fields == null ? null : fields.get(0);
        if (shardsField == null) {
            return ShardTopology.of(defaultShards);
        }
        String text = new String(shardsField, StandardCharsets.UTF_8);
        int shards;
        try {
            shards = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            shards = -1;
        }
        if (shards < 1) {
            log.warn(
                    "business={} {} field '{}' is '{}', not a positive number; using default shards {}",
                    business,
                    keys.meta(),
                    MetaFields.SHARDS,
                    text,
                    defaultShards);
            return ShardTopology.of(defaultShards);
        }
        return new ShardTopology(
                shards, ShardTopology.parseList(text(fields.get(1))), ShardTopology.parseList(text(fields.get(2))));
    }

    private static String text(byte[] field) {
        return field == null ? null : new String(field, StandardCharsets.UTF_8);
    }

    private record CachedTopology(ShardTopology topology, long readAtNanos) {}
}
