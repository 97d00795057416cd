package io.delayrelay.bench;

import java.nio.charset.StandardCharsets;
import java.util.List;

import io.delayrelay.api.DelayQueueKeys;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Live cold entries and blocks of one shard, read through the documented cold keys (docs/redis-contract.md,
 * relay-api's {@link DelayQueueKeys}) rather than the relay's own store: the sum of the member index's sizes.
 */
final class ColdCount {

    /** Same reads as the relay's cold-count.lua, in one call so a sample costs Redis one script. */
    private static final String SCRIPT =
            """
            local prefix = string.sub(KEYS[1], 1, -10)
            local fan = tonumber(redis.call('HMGET', KEYS[1], 'fan')[1])
            if not fan then
              return {0, 0}
            end
            local n = 0
            for s = 0, fan - 1 do
              n = n + redis.call('HLEN', prefix .. 'cold-ix:' .. s)
            end
            return {n, redis.call('HLEN', prefix .. 'cold-blocks')}
            """;

    record Count(long entries, long blocks) {}

    private ColdCount() {}

    static Count of(LettuceConnectionFactory factory, DelayQueueKeys keys, int shard) {
        try (RedisConnection c = factory.getConnection()) {
            List<?> reply = c.scriptingCommands()
                    .eval(
                            SCRIPT.getBytes(StandardCharsets.UTF_8),
                            ReturnType.MULTI,
                            1,
                            keys.coldMeta(shard).getBytes(StandardCharsets.UTF_8));
            return new Count(((Number) reply.get(0)).longValue(), ((Number) reply.get(1)).longValue());
        }
    }
}
