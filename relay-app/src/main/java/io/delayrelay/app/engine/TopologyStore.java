package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.List;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.api.internal.ShardTopology;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * A business's shard topology in Redis: the shard counts {@code K:meta} records, and whether a shard still holds
 * anything. The relay writes the count in force and retires drained counts here; producers read the same hash. Every
 * answer is a {@link ShardTopology}, so the scan-width rule is the one producers use.
 */
public class TopologyStore {

    private static final Logger log = LoggerFactory.getLogger(TopologyStore.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> RESHARD = lua("reshard", List.class);

    private static final RedisScript<byte[]> UNDRAIN = lua("undrain", byte[].class);
    private static final RedisScript<Long> SHARD_SIZE = lua("shard-size", Long.class);

    private final RedisTemplate<byte[], byte[]> redis;

    public TopologyStore(RedisConnectionFactory connectionFactory) {
        this(ByteRedisTemplates.create(connectionFactory));
    }

    public TopologyStore(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /**
     * Records the business's shard count in {@code K:meta}, unless a configuration with a higher topology version
     * ({@code relay.topology-version}) recorded its own. A different earlier count joins the draining list. Returns
     * what {@code K:meta} says now; {@link ShardTopology#applied()} is false when the higher version won.
     */
    public ShardTopology reshard(BusinessSpec spec, long topologyVersion) {
        return reshard(spec, topologyVersion, 0);
    }

    /**
     * Like {@link #reshard(BusinessSpec, long)}. When {@code K:meta} records no shard count (never written, or lost),
     * producers have been hashing into their fallback count {@code producersFallback}. A larger fallback is drained
     * like an earlier count (0: none). An instance whose configuration lost to a higher version says so in a WARN.
     */
    public ShardTopology reshard(BusinessSpec spec, long topologyVersion, int producersFallback) {
        List<?> reply = redis.execute(
                RESHARD,
                List.of(bytes(spec.keys().meta())),
                num(spec.shards()),
                num(topologyVersion),
                num(producersFallback));
        boolean applied = ((Number) reply.get(0)).longValue() == 1;
        int shards = ((Number) reply.get(1)).intValue();
        ShardTopology meta =
                new ShardTopology(shards, ShardTopology.parseList(text((byte[]) reply.get(2))), null, applied);
        if (!applied) {
            log.warn(
                    "business={}: shards {} not recorded in {}: a configuration with a higher relay.topology-version "
                            + "recorded shards {}; following it (this instance scans {} shards)",
                    spec.name(),
                    spec.shards(),
                    spec.keys().meta(),
                    meta.shards(),
                    meta.scanWidth(spec.shards()));
        }
        return meta;
    }

    /**
     * The shard counts {@code K:meta} records: the one in force ({@code fallbackShards} when none is recorded yet)
     * and those still draining.
     */
    public ShardTopology topology(DelayQueueKeys keys, int fallbackShards) {
        ShardTopology recorded = recordedTopology(keys);
        return recorded != null ? recorded : ShardTopology.of(fallbackShards);
    }

    /** The shard counts {@code K:meta} records, or null when it records no shard count (never written, or lost). */
    public ShardTopology recordedTopology(DelayQueueKeys keys) {
        List<Object> values = redis.opsForHash()
                .multiGet(bytes(keys.meta()), List.of(bytes(MetaFields.SHARDS), bytes(MetaFields.DRAINING)));
        int[] shards = ShardTopology.parseList(text((byte[]) values.get(0)));
        if (shards.length != 1) {
            return null;
        }
        return new ShardTopology(shards[0], ShardTopology.parseList(text((byte[]) values.get(1))), null);
    }

    /**
     * Removes drained shard counts from {@code K:meta}, provided the count in force is still {@code shards}: the one
     * the emptiness checks were made against. Returns the topology left: {@code shards} and the counts still
     * draining.
     */
    public ShardTopology undrain(DelayQueueKeys keys, int shards, int[] drained) {
        Object[] args = new Object[drained.length + 1];
        args[0] = num(shards);
        for (int i = 0; i < drained.length; i++) {
            args[i + 1] = num(drained[i]);
        }
        byte[] rest = redis.execute(UNDRAIN, List.of(bytes(keys.meta())), args);
        return new ShardTopology(shards, ShardTopology.parseList(text(rest)), null);
    }

    /**
     * Whether {@code K:meta} records no shard count while a shard in {@code [spec.shards(), fallback)} holds
     * anything: producers wrote beyond this instance's count, hashing into their fallback count.
     */
    boolean producersWroteBeyond(BusinessSpec spec, int fallback) {
        if (fallback <= spec.shards() || recordedTopology(spec.keys()) != null) {
            return false;
        }
        for (int shard = spec.shards(); shard < fallback; shard++) {
            if (holdsAnything(spec.keys(), shard)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether a shard holds anything: scheduled, in flight or waiting for a retry, dead, or a cold block. Read
     * atomically, so an entry a promotion moves from the cold tier to {@code K:i} is seen on one side. A shard count
     * is retired only once all of its extra shards hold nothing: a retired shard's cold entries would never come back.
     */
    public boolean holdsAnything(DelayQueueKeys keys, int shard) {
        byte[][] all = keys.shardKeyBytes(shard);
        Long size = redis.execute(
                SHARD_SIZE,
                List.of(
                        all[DelayQueueKeys.SHARD],
                        all[DelayQueueKeys.INFLIGHT],
                        all[DelayQueueKeys.DEAD],
                        bytes(keys.cold(shard))));
        return size != null && size > 0;
    }

    private static String text(byte[] value) {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    private static byte[] num(long value) {
        return bytes(Long.toString(value));
    }

    private static <T> RedisScript<T> lua(String name, Class<T> type) {
        return LuaScripts.load("io/delayrelay/app/lua/" + name + ".lua", type);
    }
}
