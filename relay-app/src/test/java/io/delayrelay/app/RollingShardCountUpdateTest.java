package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
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
 * Issue 11, defect 10: a rolling update from 16 to 8 shards. Old instances (16 shards) and a new one (8 shards,
 * higher {@code relay.topology-version}) run side by side, an old one restarts mid-rollout, then the old ones stop.
 * Entries sit in every one of the 16 shards, many due after the old instances are gone: each is delivered exactly
 * once and the draining count is cleared once the retired shards are empty.
 */
class RollingShardCountUpdateTest {

    private static final int OLD_SHARDS = 16;
    private static final int NEW_SHARDS = 8;
    private static final int BEFORE = 1_600;
    private static final int AFTER = 400;
    /**
     * The first entry written before the rollout falls due this long after the write, the last 10 s later: more than
     * 500 must still wait when the old instances stop. Three relay starts in a busy fork took long enough that 8 s left
     * 432 and 15 s left 448 (the old instances stopped about 24 s after the write).
     */
    private static final long FIRST_DUE_MS = 30_000;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void rollingShardCountUpdateDeliversEveryEntryOnceAndClearsDraining() throws Exception {
        String business = kit.business("rolling");
        String exchange = kit.exchange("rolling");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> old = properties(business, exchange, OLD_SHARDS, 0);
        Map<String, Object> rolled = properties(business, exchange, NEW_SHARDS, 1);
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                kit.redisFactory(), OLD_SHARDS, Duration.ofMillis(100), DelayQueueKeys::forBusiness);

        ConfigurableApplicationContext oldA = kit.startRelay(old);
        long now = kit.redisNowMs();
        Set<Integer> shardsUsed = new HashSet<>();
        Map<String, Long> dueByBody = new HashMap<>();
        for (int i = 0; i < BEFORE; i++) {
            String message = "before-" + i;
            producer.schedule(business, message, Instant.ofEpochMilli(now + FIRST_DUE_MS + (i % 100) * 100L));
            dueByBody.put(message, now + FIRST_DUE_MS + (i % 100) * 100L);
            shardsUsed.add(ShardSelector.shardOf(message.getBytes(StandardCharsets.UTF_8), OLD_SHARDS));
        }
        assertThat(shardsUsed).as("entries in every shard").hasSize(OLD_SHARDS);

        ConfigurableApplicationContext fresh = kit.startRelay(rolled);
        assertThat(meta(business, MetaFields.SHARDS)).isEqualTo("8");
        ConfigurableApplicationContext oldB = kit.startRelay(old); // an old instance restarting mid-rollout
        assertThat(meta(business, MetaFields.SHARDS))
                .as("the old configuration does not write 16 back")
                .isEqualTo("8");
        assertThat(meta(business, MetaFields.DRAINING)).isEqualTo("16");

        await().atMost(Duration.ofSeconds(6)).until(() -> producer.shardCount(business) == NEW_SHARDS);
        for (int i = 0; i < AFTER; i++) {
            long due = kit.redisNowMs() + (i % 40) * 100L;
            producer.schedule(business, "after-" + i, Instant.ofEpochMilli(due));
            dueByBody.put("after-" + i, due);
        }
        Deliveries.Inbox inbox = new Deliveries.Inbox(received);
        await().atMost(Duration.ofSeconds(10)).until(() -> inbox.distinct() >= 100);
        oldA.close();
        oldB.close();
        assertThat(kit.scheduled(business))
                .as("entries left for the new instance alone")
                .isGreaterThan(500);

        // the window runs from now to 20 s past the last due time (a fast start closes the old instances within
        // seconds of the write, while the last entries are still about 35 s from due)
        long lastDue =
                dueByBody.values().stream().mapToLong(Long::longValue).max().orElseThrow();
        Deliveries.expect(dueByBody.keySet())
                .scheduledDue(dueByBody)
                .quiet(Duration.ofSeconds(1))
                .check(
                        inbox,
                        Duration.ofMillis(Math.max(0, lastDue - kit.redisNowMs()))
                                .plusSeconds(20));

        BusinessRelay relay = fresh.getBean(RelayEngine.class).relays().get(business);
        await().atMost(Duration.ofSeconds(15)).until(() -> "".equals(meta(business, MetaFields.DRAINING)));
        await().atMost(Duration.ofSeconds(5)).until(() -> relay.state().scanWidth() == NEW_SHARDS);
        assertThat(kit.countAll(business, "inflight")).isZero();
    }

    private Map<String, Object> properties(String business, String exchange, int shards, int topologyVersion) {
        Map<String, Object> p = RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", shards, "threads", 2, "max-idle", "200ms");
        p.put("relay.reaper-interval", "200ms");
        p.put("relay.reshard-grace", "1s");
        p.put("relay.topology-version", topologyVersion);
        return p;
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
