package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;

@Tag("timing")
class WrongTypeShardTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aShardKeyOfTheWrongTypeIsSetAsideAndTheOtherShardsKeepTheirLag() throws Exception {
        String business = kit.business("wrongtype");
        String exchange = kit.exchange("wrongtype");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        try (RedisConnection c = kit.redis()) {
            c.stringCommands()
                    .set(keys.shard(3).getBytes(StandardCharsets.UTF_8), "not a zset".getBytes(StandardCharsets.UTF_8));
        }
        ConfigurableApplicationContext context =
                kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "threads", 1));

        List<String> messages = new ArrayList<>();
        for (int i = 0; messages.size() < 50; i++) {
            String message = "fine-" + i;
            if (ShardSelector.shardOf(message, 16) != 3) {
                messages.add(message);
            }
        }
        long due = kit.redisNowMs() + 500;
        Map<String, Long> dueByBody = new HashMap<>();
        for (String message : messages) {
            kit.producer().schedule(business, message, Instant.ofEpochMilli(due));
            dueByBody.put(message, due);
        }
        List<Received> all = Deliveries.expect(messages)
                .scheduledDue(dueByBody)
                .check(received, Duration.ofSeconds(5))
                .all();
        assertThat(all).allSatisfy(r -> assertThat(r.receivedAtMs() - r.header(RelayHeaders.DUE_AT))
                .as("lag of %s", r.text())
                .isLessThan(500));
        BusinessRelay relay = context.getBean(RelayEngine.class).relays().get(business);
        assertThat(relay.quarantinedShards()).containsExactly(3);
        assertThat(relay.liveWorkers()).isEqualTo(1);
        try (RedisConnection c = kit.redis()) {
            assertThat(new String(
                            c.stringCommands().get(keys.shard(3).getBytes(StandardCharsets.UTF_8)),
                            StandardCharsets.UTF_8))
                    .as("the foreign key is left alone")
                    .isEqualTo("not a zset");
        }
    }
}
