package io.delayrelay.api;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

import io.delayrelay.api.internal.LuaScripts;
import org.springframework.data.redis.connection.zset.Tuple;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The producer's read side: {@code count} and {@code peek} over every shard a business's entries may be in. Reads
 * only, one shard (one cluster slot) per call, merged here.
 */
final class ShardReader {

    /** Hot and cold entries of one shard, read only; see shard-count.lua. */
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> SHARD_COUNT =
            LuaScripts.load("io/delayrelay/api/internal/shard-count.lua", List.class);

    private final RedisTemplate<byte[], byte[]> redis;

    ShardReader(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /** Live entries of the business, hot and cold, over its first {@code width} shards. */
    long count(DelayQueueKeys keys, int width) {
        long sum = 0;
        // one script call per shard (one slot each): the shard zset's size and the cold tier's live count
        for (int i = 0; i < width; i++) {
            List<?> counts = redis.execute(
                    SHARD_COUNT, List.of(DelayQueueKeys.bytes(keys.shard(i)), DelayQueueKeys.bytes(keys.coldMeta(i))));
            for (Object n : counts == null ? List.of() : counts) {
                sum += ((Number) n).longValue();
            }
        }
        return sum;
    }

    /** The {@code limit} hot entries due first over the business's first {@code width} shards. */
    List<ScheduledEntry> peek(DelayQueueKeys keys, int width, int limit) {
        List<ScheduledEntry> all = new ArrayList<>();
        for (int shard = 0; shard < width; shard++) {
            all.addAll(peekShard(keys, shard, limit));
        }
        all.sort(Comparator.comparingLong(ScheduledEntry::dueAtMs));
        return all.size() > limit ? List.copyOf(all.subList(0, limit)) : List.copyOf(all);
    }

    private List<ScheduledEntry> peekShard(DelayQueueKeys keys, int shard, int limit) {
        byte[] shardKey = DelayQueueKeys.bytes(keys.shard(shard));
        byte[] payloadKey = DelayQueueKeys.bytes(keys.payloads(shard));
        return redis.execute((RedisCallback<List<ScheduledEntry>>) connection -> {
            Set<Tuple> tuples = connection.zSetCommands().zRangeWithScores(shardKey, 0, limit - 1);
            if (tuples == null || tuples.isEmpty()) {
                return List.of();
            }
            byte[][] members = tuples.stream().map(Tuple::getValue).toArray(byte[][]::new);
            List<byte[]> payloads = connection.hashCommands().hMGet(payloadKey, members);
            List<ScheduledEntry> entries = new ArrayList<>(members.length);
            int i = 0;
            for (Tuple tuple : tuples) {
                byte[] payload = payloads == null ? null : payloads.get(i);
                entries.add(new ScheduledEntry(
                        shard, tuple.getValue(), payload, tuple.getScore().longValue()));
                i++;
            }
            return entries;
        });
    }
}
