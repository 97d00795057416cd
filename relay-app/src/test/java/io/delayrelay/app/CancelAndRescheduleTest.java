package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;

class CancelAndRescheduleTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void cancelAndRescheduleByMessageTakeEffect() throws Exception {
        String business = kit.business("bymsg");
        String exchange = kit.exchange("bymsg");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();

        producer.schedule(business, "cancelled", Instant.ofEpochMilli(now + 800));
        producer.schedule(business, "moved", Instant.ofEpochMilli(now + 800));
        producer.schedule(business, "kept", Instant.ofEpochMilli(now + 800));
        assertThat(producer.cancel(business, "cancelled")).isTrue();
        assertThat(producer.cancel(business, "cancelled")).as("second cancel").isFalse();
        assertThat(producer.cancel(business, "never scheduled")).isFalse();
        long movedDue = now + 2000;
        assertThat(producer.reschedule(business, "moved", Instant.ofEpochMilli(movedDue)))
                .isTrue();
        assertThat(producer.reschedule(business, "never scheduled", Instant.ofEpochMilli(movedDue)))
                .isFalse();
        assertThat(producer.count(business)).isEqualTo(2);

        List<Received> all = RelayTestKit.collect(received, 2, Duration.ofSeconds(8), Duration.ofMillis(500));
        assertThat(all).extracting(Received::text).containsExactly("kept", "moved");
        assertThat(all.get(1).receivedAtMs()).isGreaterThanOrEqualTo(movedDue);
        assertThat(all.get(1).header(RelayHeaders.DUE_AT)).isEqualTo(movedDue);
    }

    @Test
    void cancelAndRescheduleByIdTakeEffectAndPayloadsAreCleanedUp() throws Exception {
        String business = kit.business("byid");
        String exchange = kit.exchange("byid");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();

        producer.scheduleById(
                business, "order-1", "{\"order\":1,\"action\":\"cancel\"}", Instant.ofEpochMilli(now + 800));
        producer.scheduleById(
                business, "order-2", "{\"order\":2,\"action\":\"cancel\"}", Instant.ofEpochMilli(now + 800));
        producer.scheduleById(
                business, "order-3", "{\"order\":3,\"action\":\"cancel\"}", Instant.ofEpochMilli(now + 800));
        assertThat(producer.cancelById(business, "order-1")).isTrue();
        assertThat(payload(business, "order-1")).as("cancelled payload removed").isNull();
        long movedDue = now + 2000;
        assertThat(producer.rescheduleById(business, "order-2", Instant.ofEpochMilli(movedDue)))
                .isTrue();
        assertThat(producer.rescheduleById(business, "order-9", Instant.ofEpochMilli(movedDue)))
                .isFalse();
        assertThat(producer.peek(business, 10))
                .extracting(e -> e.memberAsString())
                .containsExactly("order-3", "order-2");
        assertThat(new String(producer.peek(business, 1).get(0).message(), StandardCharsets.UTF_8))
                .isEqualTo("{\"order\":3,\"action\":\"cancel\"}");

        List<Received> all = RelayTestKit.collect(received, 2, Duration.ofSeconds(8), Duration.ofMillis(500));
        assertThat(all)
                .extracting(Received::text)
                .containsExactly("{\"order\":3,\"action\":\"cancel\"}", "{\"order\":2,\"action\":\"cancel\"}");
        assertThat(all).extracting(r -> r.headers().get(RelayHeaders.ID)).containsExactly("order-3", "order-2");
        assertThat(all.get(1).receivedAtMs()).isGreaterThanOrEqualTo(movedDue);
        assertThat(payload(business, "order-2")).as("delivered payload removed").isNull();
        assertThat(payload(business, "order-3")).as("delivered payload removed").isNull();
    }

    private byte[] payload(String business, String id) {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        int shard = ShardSelector.shardOf(id, 16);
        try (RedisConnection c = kit.redis()) {
            return c.hashCommands()
                    .hGet(keys.payloads(shard).getBytes(StandardCharsets.UTF_8), id.getBytes(StandardCharsets.UTF_8));
        }
    }
}
