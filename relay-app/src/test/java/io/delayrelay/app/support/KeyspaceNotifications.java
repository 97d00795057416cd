package io.delayrelay.app.support;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What tests of keyspace notifications write and read, on the kit's Redis (a {@link PrivateRedis} started with
 * {@code notify-keyspace-events Kz}, so that no relay of another test sees the setting change): a plain {@code ZADD}
 * due now (Redis time), the subscribers of shards' keyspace channels, and the pick-up bound of what arrived.
 */
public final class KeyspaceNotifications {

    private final RelayTestKit kit;

    public KeyspaceNotifications(RelayTestKit kit) {
        this.kit = kit;
    }

    /** Writes a plain ZADD (no relay-api wake-up) due now by Redis time; returns its text. */
    public String zaddDueNow(DelayQueueKeys keys, int shard, String text) {
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands()
                    .zAdd(
                            keys.shard(shard).getBytes(StandardCharsets.UTF_8),
                            c.serverCommands().time(),
                            text.getBytes(StandardCharsets.UTF_8));
        }
        return text;
    }

    /** PUBSUB NUMSUB of the keyspace channel of each shard below {@code shards} (db 0 of the kit's Redis). */
    public Map<Integer, Long> subscribers(DelayQueueKeys keys, int shards) {
        String[] channels = new String[shards];
        for (int shard = 0; shard < shards; shard++) {
            channels[shard] = "__keyspace@0__:" + keys.shard(shard);
        }
        Map<Integer, Long> counts = new HashMap<>();
        try (StatefulRedisConnection<String, String> c =
                ((RedisClient) kit.redisFactory().getNativeClient()).connect()) {
            Map<String, Long> numsub = c.sync().pubsubNumsub(channels);
            for (int shard = 0; shard < shards; shard++) {
                counts.put(shard, numsub.get(channels[shard]));
            }
        }
        return counts;
    }

    /** Every message was published at or after its due time and within {@code bound} of it. */
    public static void assertPickedUpWithin(List<Received> all, Duration bound) {
        for (Received r : all) {
            assertThat(r.header("x-delay-relayed-at") - r.header("x-delay-due-at"))
                    .as("due -> relayed of %s", r.text())
                    .isBetween(0L, bound.toMillis());
        }
    }
}
