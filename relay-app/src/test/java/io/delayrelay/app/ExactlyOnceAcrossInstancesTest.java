package io.delayrelay.app;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ExactlyOnceAcrossInstancesTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void deliversTenThousandMessagesExactlyOnceWithThreeInstancesOfFourThreads() throws Exception {
        String business = kit.business("once");
        String exchange = kit.exchange("once");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        for (int instance = 0; instance < 3; instance++) {
            kit.startRelay(RelayTestKit.business(
                    kit.baseProperties(), business, exchange, "due", "threads", 4, "batch-size", 50));
        }
        RedisDelayedMessageProducer producer = kit.producer();
        long due = kit.redisNowMs() + 500;
        Map<String, Long> dueByBody = new HashMap<>();
        for (int i = 0; i < 10_000; i++) {
            producer.schedule(business, "msg-" + i, Instant.ofEpochMilli(due + (i % 1000)));
            dueByBody.put("msg-" + i, due + (i % 1000));
        }

        Deliveries.expect(dueByBody.keySet())
                .scheduledDue(dueByBody)
                .quiet(Duration.ofSeconds(1))
                .check(received, Duration.ofSeconds(60));
        assertThat(kit.scheduled(business)).isZero();
        assertThat(kit.countAll(business, "inflight")).isZero();
    }
}
