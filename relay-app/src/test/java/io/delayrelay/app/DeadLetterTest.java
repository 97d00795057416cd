package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class DeadLetterTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void unroutableMessageEndsInTheDeadSetWithItsReason() {
        String business = kit.business("unroutable");
        String exchange = kit.exchange("unroutable");
        kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "nobody-listens"));

        kit.producer().scheduleAfter(business, "order 7 expired", Duration.ZERO);

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        int shard = ShardSelector.shardOf("order 7 expired", 16);
        byte[] member = "order 7 expired".getBytes(StandardCharsets.UTF_8);
        await().atMost(Duration.ofSeconds(5)).until(() -> deadScore(keys.dead(shard), member) != null);
        try (RedisConnection c = kit.redis()) {
            String reason =
                    new String(c.hashCommands().hGet(bytes(keys.deadReasons(shard)), member), StandardCharsets.UTF_8);
            assertThat(reason)
                    .startsWith("unroutable: 312 NO_ROUTE")
                    .contains(exchange)
                    .contains("nobody-listens");
        }
        assertThat(kit.scheduled(business)).isZero();
        assertThat(kit.countAll(business, "inflight")).isZero();
    }

    @Test
    void missingExchangeDeadLettersAfterMaxAttemptsAndTheWorkerKeepsRunning() throws Exception {
        String business = kit.business("noexchange");
        String exchange = kit.exchange("noexchange");
        kit.startRelay(RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "max-attempts",
                3,
                "retry-delay",
                "100ms",
                "threads",
                1));
        kit.channel().exchangeDelete(exchange);

        kit.producer().scheduleAfter(business, "lost exchange", Duration.ZERO);

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        int shard = ShardSelector.shardOf("lost exchange", 16);
        byte[] member = "lost exchange".getBytes(StandardCharsets.UTF_8);
        await().atMost(Duration.ofSeconds(15)).until(() -> deadScore(keys.dead(shard), member) != null);
        try (RedisConnection c = kit.redis()) {
            String reason =
                    new String(c.hashCommands().hGet(bytes(keys.deadReasons(shard)), member), StandardCharsets.UTF_8);
            assertThat(reason).contains("NOT_FOUND").endsWith("(attempts: 3)");
        }

        kit.channel().exchangeDeclare(exchange, "direct", false, false, null);
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.producer().scheduleAfter(business, "exchange is back", Duration.ZERO);
        List<Received> all = RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(all).extracting(Received::text).containsExactly("exchange is back");
        assertThat(kit.countAll(business, "inflight")).isZero();
    }

    private Double deadScore(String deadKey, byte[] member) {
        try (RedisConnection c = kit.redis()) {
            return c.zSetCommands().zScore(bytes(deadKey), member);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
