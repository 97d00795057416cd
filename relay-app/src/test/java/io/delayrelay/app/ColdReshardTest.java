package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 27, reshard with retirement: a business with {@code cold-after} whose entries sit cold in shard 3 of 4 goes
 * down to 2 shards. Shard 3 holds nothing hot, yet the shard count 4 is not retired while its cold tier holds a
 * block; the mover keeps promoting the draining shard, every cold entry is delivered once and not early, and the
 * count is retired only after.
 */
class ColdReshardTest {

    private static final int OLD_SHARDS = 4;
    private static final int NEW_SHARDS = 2;
    private static final int SHARD = 3;
    private static final int ENTRIES = 300;

    private final RelayTestKit kit = new RelayTestKit();
    private final ColdStore cold = new ColdStore(ByteRedisTemplates.create(kit.redisFactory()));

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void coldEntriesOfARetiredShardAreDeliveredOnceBeforeTheShardCountIsRetired() throws Exception {
        String business = kit.business("coldreshard");
        String exchange = kit.exchange("coldreshard");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                kit.redisFactory(), OLD_SHARDS, Duration.ofMillis(100), DelayQueueKeys::forBusiness);

        ConfigurableApplicationContext before = kit.startRelay(properties(business, exchange, OLD_SHARDS, 0));
        // cold-after 10 s: entries due in 30-31 s are demoted at once and come back from 25 s on (lead 5 s)
        long now = kit.redisNowMs();
        Map<String, Long> dueByBody = new HashMap<>();
        for (int i = 0; dueByBody.size() < ENTRIES; i++) {
            String message = "cold-" + i;
            if (ShardSelector.shardOf(message.getBytes(StandardCharsets.UTF_8), OLD_SHARDS) != SHARD) {
                continue;
            }
            long due = now + 30_000 + (dueByBody.size() % 100) * 10L;
            producer.schedule(business, message, Instant.ofEpochMilli(due));
            dueByBody.put(message, due);
        }
        await().atMost(Duration.ofSeconds(10))
                .until(() -> cold.count(keys, SHARD).entries() == ENTRIES && zcard(keys.shard(SHARD)) == 0);
        before.close();

        ConfigurableApplicationContext after = kit.startRelay(properties(business, exchange, NEW_SHARDS, 1));
        assertThat(meta(business, MetaFields.SHARDS)).isEqualTo("2");
        assertThat(meta(business, MetaFields.DRAINING)).isEqualTo("4");
        BusinessRelay relay = after.getBean(RelayEngine.class).relays().get(business);
        assertThat(relay.state().scanWidth()).isEqualTo(OLD_SHARDS);
        assertThat(kit.redisNowMs())
                .as("the check below runs while every entry is still cold (relay started too slowly)")
                .isLessThan(now + 21_000);
        // reshard-grace 1 s, topology checked every 200 ms: without the cold blocks in the emptiness check, shard
        // count 4 would be retired within ~2 s and shard 3's entries never promoted
        await().during(Duration.ofSeconds(3))
                .atMost(Duration.ofSeconds(4))
                .until(() -> "4".equals(meta(business, MetaFields.DRAINING))
                        && relay.state().scanWidth() == OLD_SHARDS);
        assertThat(cold.count(keys, SHARD).entries()).isEqualTo(ENTRIES);

        Deliveries.Inbox inbox = new Deliveries.Inbox(received);
        Deliveries.expect(dueByBody.keySet())
                .scheduledDue(dueByBody)
                .quiet(Duration.ofSeconds(1))
                .check(inbox, Duration.ofSeconds(40));

        assertThat(cold.count(keys, SHARD)).isEqualTo(new ColdStore.Count(0, 0));
        await().atMost(Duration.ofSeconds(10)).until(() -> "".equals(meta(business, MetaFields.DRAINING)));
        await().atMost(Duration.ofSeconds(5)).until(() -> relay.state().scanWidth() == NEW_SHARDS);
        assertThat(kit.countAll(business, "inflight")).isZero();
    }

    private Map<String, Object> properties(String business, String exchange, int shards, int topologyVersion) {
        Map<String, Object> p = RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "shards",
                shards,
                "threads",
                2,
                "max-idle",
                "200ms",
                "cold-after",
                "10s");
        p.put("relay.reaper-interval", "200ms");
        p.put("relay.reshard-grace", "1s");
        p.put("relay.topology-version", topologyVersion);
        return p;
    }

    private long zcard(String key) {
        try (RedisConnection c = kit.redis()) {
            Long n = c.zSetCommands().zCard(key.getBytes(StandardCharsets.UTF_8));
            return n == null ? 0 : n;
        }
    }

    private String meta(String business, String field) {
        try (RedisConnection c = kit.redis()) {
            byte[] value = c.hashCommands()
                    .hGet(
                            DelayQueueKeys.forBusiness(business).meta().getBytes(StandardCharsets.UTF_8),
                            field.getBytes(StandardCharsets.UTF_8));
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }
}
