package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Another program wrote a string where a shard's payload hash belongs. The shard is quarantined; its entries must
 * stay where they are (in {@code K:i}) until someone fixes the key: pop.lua reads the payloads and attempts before
 * its first write, so the WRONGTYPE error leaves nothing moved (a Lua error does not undo earlier writes).
 */
class WrongTypePayloadsKeyTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aPayloadsKeyOfTheWrongTypeLeavesTheShardsEntriesUntouched() {
        String business = kit.business("wrong-payloads");
        String exchange = kit.exchange("wrong-payloads");
        kit.queue(exchange, "due");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        String member = "entry next to a broken payload hash";
        int shard = ShardSelector.shardOf(member, 16);
        byte[] memberBytes = member.getBytes(StandardCharsets.UTF_8);
        try (RedisConnection c = kit.redis()) {
            c.stringCommands()
                    .set(DelayQueueKeys.bytes(keys.payloads(shard)), "not a hash".getBytes(StandardCharsets.UTF_8));
            c.zSetCommands().zAdd(DelayQueueKeys.bytes(keys.shard(shard)), kit.redisNowMs(), memberBytes);
        }
        ConfigurableApplicationContext context = kit.startRelay(RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "threads", 1, "lease", "2s", "publish-timeout", "1s"));

        await().atMost(Duration.ofSeconds(10)).until(() -> context.getBean(RelayEngine.class)
                .relays()
                .get(business)
                .quarantinedShards()
                .contains(shard));
        try (RedisConnection c = kit.redis()) {
            assertThat(c.zSetCommands().zScore(DelayQueueKeys.bytes(keys.inflight(shard)), memberBytes))
                    .as("moved to in-flight by a pop that failed")
                    .isNull();
            assertThat(c.zSetCommands().zScore(DelayQueueKeys.bytes(keys.shard(shard)), memberBytes))
                    .as("still scheduled in its shard")
                    .isNotNull();
        }
    }
}
