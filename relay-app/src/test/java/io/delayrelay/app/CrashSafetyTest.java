package io.delayrelay.app;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.engine.BatchPublisher;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class CrashSafetyTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    /**
     * Stands for a process that dies right after popping: nothing of the batch is published or settled. (A worker
     * survives the error and pops again, crashing the same way, until the relay is closed.)
     */
    static final class SimulatedCrash extends Error {
        SimulatedCrash() {
            super("simulated crash between pop and confirm", null, false, false);
        }
    }

    static final AtomicInteger POPPED_BEFORE_CRASH = new AtomicInteger();
    static final AtomicInteger CRASHED_WORKERS = new AtomicInteger();

    @Configuration(proxyBeanMethods = false)
    static class CrashingPublisherConfig {
        @Bean
        BatchPublisher crashingPublisher() {
            return new BatchPublisher() {
                @Override
                public CompletableFuture<List<PublishOutcome>> publish(BusinessSpec spec, List<DueMessage> batch) {
                    POPPED_BEFORE_CRASH.addAndGet(batch.size());
                    CRASHED_WORKERS.incrementAndGet();
                    throw new SimulatedCrash();
                }

                @Override
                public void prepareExchange(BusinessSpec spec) {}
            };
        }
    }

    @Test
    void entriesPoppedByACrashedRelayAreRedeliveredAfterTheLeaseAndNothingStaysInFlight() throws Exception {
        String business = kit.business("crash");
        String exchange = kit.exchange("crash");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        long due = kit.redisNowMs() + 200;
        Map<String, Long> dueByBody = new HashMap<>();
        for (int i = 0; i < 50; i++) {
            kit.producer().schedule(business, "job-" + i, Instant.ofEpochMilli(due));
            dueByBody.put("job-" + i, due);
        }
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "lease",
                "3s",
                "publish-timeout",
                "1s",
                "batch-size",
                10,
                "threads",
                2);

        POPPED_BEFORE_CRASH.set(0);
        CRASHED_WORKERS.set(0);
        ConfigurableApplicationContext crashed = kit.startRelay(props, CrashingPublisherConfig.class);
        await().atMost(Duration.ofSeconds(10)).until(() -> CRASHED_WORKERS.get() >= 2);
        crashed.close();
        int popped = POPPED_BEFORE_CRASH.get();
        assertThat(popped).isPositive();
        assertThat(kit.countAll(business, "inflight"))
                .as("left in flight by the crash")
                .isEqualTo(popped);
        assertThat(received.poll(200, TimeUnit.MILLISECONDS))
                .as("nothing published by the crashed relay")
                .isNull();

        long restartedAt = System.currentTimeMillis();
        kit.startRelay(props);
        // every body once, none early, and a quiet period after the 50th longer than the lease (3 s) plus a reaper
        // round: an entry whose ack was lost would be redelivered within it
        List<Received> all = Deliveries.expect(dueByBody.keySet())
                .scheduledDue(dueByBody)
                .quiet(Duration.ofSeconds(4))
                .check(received, Duration.ofSeconds(20))
                .all();
        long redelivered =
                all.stream().filter(r -> r.header(RelayHeaders.ATTEMPT) == 2).count();
        assertThat(redelivered).as("entries redelivered after the lease").isEqualTo(popped);
        assertThat(System.currentTimeMillis() - restartedAt).isLessThan(15_000 + 4_000);
        await().atMost(Duration.ofSeconds(5)).until(() -> kit.countAll(business, "inflight") == 0);
        assertThat(kit.scheduled(business)).isZero();
    }
}
