package io.delayrelay.app;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

@Tag("timing")
class DeliveryTimingTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void deliversAMessageNoEarlierThanDueAndWithinOneSecondAfter() throws Exception {
        String business = kit.business("timing");
        String exchange = kit.exchange("timing");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        RedisDelayedMessageProducer producer = kit.producer();

        long due = producer.scheduleAfter(business, "cancel order 1001", Duration.ofMillis(1500));

        Received message = received.poll(10, TimeUnit.SECONDS);
        assertThat(message).as("message delivered").isNotNull();
        assertThat(message.text()).isEqualTo("cancel order 1001");
        assertThat(message.header(RelayHeaders.DUE_AT)).isEqualTo(due);
        assertThat(message.header(RelayHeaders.RELAYED_AT)).isGreaterThanOrEqualTo(due);
        assertThat(message.receivedAtMs()).isGreaterThanOrEqualTo(due).isLessThanOrEqualTo(due + 1000);
        assertThat(message.headers().get(RelayHeaders.BUSINESS)).isEqualTo(business);
        assertThat(message.header(RelayHeaders.ATTEMPT)).isEqualTo(1);
        assertThat(message.header(RelayHeaders.SHARD)).isEqualTo(ShardSelector.shardOf("cancel order 1001", 16));
        assertThat(message.messageId()).isNotBlank();
        assertThat(received.poll(300, TimeUnit.MILLISECONDS))
                .as("exactly one delivery")
                .isNull();
        assertThat(kit.countAll(business, "inflight")).isZero();
    }

    @Test
    void deliversThousandRandomMessagesByteExactInDueOrderPerShard() throws Exception {
        String business = kit.business("order");
        String exchange = kit.exchange("order");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "threads", 1));
        RedisDelayedMessageProducer producer = kit.producer();

        Random random = new Random(42);
        // every entry must be written before the first falls due, or a late write could rightly overtake an
        // earlier one; on a loaded machine writing 1000 entries can take a while
        long base = kit.redisNowMs() + 2500;
        Map<String, Long> dueByBody = new HashMap<>();
        for (int i = 0; i < 1000; i++) {
            byte[] body = new byte[8 + random.nextInt(120)];
            random.nextBytes(body);
            body[0] = (byte) (i >> 8);
            body[1] = (byte) i;
            long due = base + random.nextInt(2000);
            producer.schedule(business, body, Instant.ofEpochMilli(due));
            dueByBody.put(Base64.getEncoder().encodeToString(body), due);
        }
        assertThat(kit.redisNowMs())
                .as("all written before the first falls due")
                .isLessThan(base);

        List<Received> all = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 15_000;
        while (all.size() < 1000 && System.currentTimeMillis() < deadline) {
            Received r = received.poll(500, TimeUnit.MILLISECONDS);
            if (r != null) {
                all.add(r);
            }
        }
        assertThat(all).hasSize(1000);
        assertThat(received.poll(300, TimeUnit.MILLISECONDS)).as("no duplicate").isNull();
        Map<Long, Long> lastDuePerShard = new HashMap<>();
        for (Received r : all) {
            String key = Base64.getEncoder().encodeToString(r.body());
            assertThat(dueByBody).as("byte-exact body").containsKey(key);
            long due = dueByBody.remove(key);
            assertThat(r.header(RelayHeaders.DUE_AT)).isEqualTo(due);
            assertThat(r.receivedAtMs()).isGreaterThanOrEqualTo(due);
            long shard = r.header(RelayHeaders.SHARD);
            Long previous = lastDuePerShard.put(shard, due);
            if (previous != null) {
                assertThat(due).as("due order within shard %d", shard).isGreaterThanOrEqualTo(previous);
            }
        }
        assertThat(dueByBody).isEmpty();
        assertThat(lastDuePerShard).hasSize(16);
    }
}
