package io.delayrelay.app.metrics;

import java.nio.charset.StandardCharsets;
import java.util.Set;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStringCommands;
import org.springframework.data.redis.connection.zset.Tuple;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.types.Expiration;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * Reads a business's backlog with cheap commands per shard (ZRANGE 0 0 WITHSCORES on {@code K:i}, then ZCARD when
 * it holds anything and ZCOUNT -inf now when its earliest entry is due; ZCARD on inflight and dead) over shards
 * 0..shards-1 (the scan width), against Redis time: an empty shard costs three commands. The cold count is the live
 * count the cold tier keeps ({@code cold-count.lua}, one call per shard, one HMGET when the shard has no cold tier),
 * read after the hot keys: an entry the cold mover moves meanwhile may be counted in both states or in neither (the
 * reading is per shard and per command, not a snapshot).
 */
public final class BacklogReader {

    private final RedisTemplate<byte[], byte[]> redis;
    private final ColdStore cold;

    public BacklogReader(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
        this.cold = new ColdStore(redis);
    }

    /** Reads the backlog now. */
    public Backlog read(BusinessSpec spec, int shards) {
        Backlog hot = redis.execute((RedisCallback<Backlog>) connection -> read(connection, spec, shards));
        long entries = 0;
        for (int shard = 0; shard < shards; shard++) {
            entries += cold.count(spec.keys(), shard).entries();
        }
        return new Backlog(
                hot.due(), hot.scheduled(), hot.inflight(), hot.dead(), entries, hot.oldestOverdueMs(), hot.atMs());
    }

    private static Backlog read(RedisConnection c, BusinessSpec spec, int shards) {
        DelayQueueKeys keys = spec.keys();
        long now = c.serverCommands().time();
        long due = 0;
        long total = 0;
        long inflight = 0;
        long dead = 0;
        long oldest = Long.MAX_VALUE;
        for (int shard = 0; shard < shards; shard++) {
            byte[] key = bytes(keys.shard(shard));
            Set<Tuple> first = c.zSetCommands().zRangeWithScores(key, 0, 0);
            Double score = first == null || first.isEmpty()
                    ? null
                    : first.iterator().next().getScore();
            if (score != null) {
                oldest = Math.min(oldest, score.longValue());
                total += orZero(c.zSetCommands().zCard(key));
                if (score <= now) {
                    due += orZero(c.zSetCommands().zCount(key, Double.NEGATIVE_INFINITY, now));
                }
            }
            inflight += orZero(c.zSetCommands().zCard(bytes(keys.inflight(shard))));
            dead += orZero(c.zSetCommands().zCard(bytes(keys.dead(shard))));
        }
        long overdue = oldest <= now ? now - oldest : 0;
        return new Backlog(due, total - due, inflight, dead, 0, overdue, now);
    }

    /** Stores a sample in {@code K:backlog} for the other instances, for {@code ttlMs}. */
    public void share(DelayQueueKeys keys, Backlog backlog, long ttlMs) {
        String value = backlog.due() + " " + backlog.scheduled() + " " + backlog.inflight() + " " + backlog.dead() + " "
                + backlog.oldestOverdueMs() + " " + backlog.atMs() + " " + backlog.cold();
        redis.execute((RedisCallback<Object>) c -> c.stringCommands()
                .set(
                        bytes(keys.backlog()),
                        bytes(value),
                        Expiration.milliseconds(Math.max(1, ttlMs)),
                        RedisStringCommands.SetOption.upsert()));
    }

    /**
     * The sample another instance stored in {@code K:backlog}, or null when there is none (or it is not one). A
     * sample of an instance older than the cold count (six fields) reads as no cold entry.
     */
    public Backlog shared(DelayQueueKeys keys) {
        byte[] value =
                redis.execute((RedisCallback<byte[]>) c -> c.stringCommands().get(bytes(keys.backlog())));
        if (value == null) {
            return null;
        }
        String[] parts = new String(value, StandardCharsets.UTF_8).split(" ");
        if (parts.length != 6 && parts.length != 7) {
            return null;
        }
        try {
            return new Backlog(
                    Long.parseLong(parts[0]),
                    Long.parseLong(parts[1]),
                    Long.parseLong(parts[2]),
                    Long.parseLong(parts[3]),
                    parts.length == 7 ? Long.parseLong(parts[6]) : 0,
                    Long.parseLong(parts[4]),
                    Long.parseLong(parts[5]));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static long orZero(Long value) {
        return value == null ? 0 : value;
    }
}
