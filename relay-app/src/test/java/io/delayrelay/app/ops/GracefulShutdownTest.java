package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import com.rabbitmq.client.GetResponse;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class GracefulShutdownTest {

    private static final int TOTAL = 3_000;
    private static final List<String> READINESS = new CopyOnWriteArrayList<>();

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void shutdownDuringABusyDrainLosesNothingAndLeavesNoConfirmedEntryInFlight() throws Exception {
        String business = kit.business("shutdown");
        String exchange = kit.exchange("shutdown");
        String queue = kit.queue(exchange, "due");
        RedisDelayedMessageProducer producer = kit.producer();
        for (int i = 0; i < TOTAL; i++) {
            producer.scheduleAfter(business, "msg-" + i, Duration.ZERO);
        }
        READINESS.clear();
        ConfigurableApplicationContext relay = kit.startRelay(
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "threads", 2, "batch-size", 20),
                ReadinessRecorder.class);
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> kit.channel().messageCount(queue) >= 200);

        relay.close();

        long delivered = kit.channel().messageCount(queue);
        long scheduled = kit.scheduled(business);
        assertThat(delivered).as("the drain was still busy at shutdown").isLessThan(TOTAL);
        assertThat(kit.countAll(business, "inflight"))
                .as("every popped batch was confirmed and acked")
                .isZero();
        assertThat(delivered + scheduled).isEqualTo(TOTAL);

        Set<String> bodies = new HashSet<>();
        GetResponse message;
        while ((message = kit.channel().basicGet(queue, true)) != null) {
            assertThat(bodies.add(new String(message.getBody(), StandardCharsets.UTF_8)))
                    .as("no duplicate")
                    .isTrue();
        }
        assertThat(bodies).hasSize((int) delivered);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        try (RedisConnection c = kit.redis()) {
            for (String body : bodies) {
                int shard = ShardSelector.shardOf(body, 16);
                byte[] member = body.getBytes(StandardCharsets.UTF_8);
                assertThat(c.zSetCommands().zScore(keys.inflight(shard).getBytes(StandardCharsets.UTF_8), member))
                        .as("confirmed, so not in flight")
                        .isNull();
                assertThat(c.zSetCommands().zScore(keys.shard(shard).getBytes(StandardCharsets.UTF_8), member))
                        .as("delivered, so not scheduled")
                        .isNull();
            }
        }

        assertThat(READINESS)
                .as("readiness refused traffic while the engine was still running, before it drained")
                .containsSubsequence("ACCEPTING_TRAFFIC engine-running", "REFUSING_TRAFFIC engine-running");
        assertThat(READINESS.get(READINESS.size() - 1)).isEqualTo("REFUSING_TRAFFIC engine-running");
    }

    /** Records each readiness change with whether the engine was running at that moment. */
    @Configuration(proxyBeanMethods = false)
    static class ReadinessRecorder {

        private final RelayEngine engine;

        ReadinessRecorder(RelayEngine engine) {
            this.engine = engine;
        }

        @EventListener
        void onReadiness(AvailabilityChangeEvent<ReadinessState> event) {
            READINESS.add(event.getState() + (engine.isRunning() ? " engine-running" : " engine-stopped"));
        }
    }
}
