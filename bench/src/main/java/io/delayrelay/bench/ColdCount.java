package io.delayrelay.bench;

import java.nio.charset.StandardCharsets;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Hot and cold entries of a business, read through public surfaces only: relay-api's {@code count()} (hot + cold,
 * docs/cold-tier.md) less the hot shards' sizes ({@code ZCARD K:i}); blocks are the size of the documented
 * {@code {K:i}:cold-blocks} hash (docs/redis-contract.md). An entry the relay moves between the reads may be counted
 * in both states or neither, as relay-api's count says.
 */
final class ColdCount {

    record Count(long hot, long entries, long blocks) {}

    private ColdCount() {}

    /** Hot and cold entries over the first {@code shards} shards; blocks only when {@code withBlocks}. */
    static Count of(
            RedisDelayedMessageProducer producer,
            LettuceConnectionFactory factory,
            String business,
            int shards,
            boolean withBlocks) {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long hot = 0;
        long blocks = 0;
        try (RedisConnection c = factory.getConnection()) {
            for (int shard = 0; shard < shards; shard++) {
                Long size = c.zSetCommands().zCard(bytes(keys.shard(shard)));
                hot += size == null ? 0 : size;
                if (withBlocks) {
                    Long b = c.hashCommands().hLen(bytes(keys.coldBlocks(shard)));
                    blocks += b == null ? 0 : b;
                }
            }
        }
        long all = producer.count(business);
        return new Count(hot, Math.max(0, all - hot), blocks);
    }

    private static byte[] bytes(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }
}
