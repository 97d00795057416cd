package io.delayrelay.app.faults;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.Deliveries.Inbox;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 3: the relay's Redis (a redis-server of this test's own, AOF with appendfsync always, on a free port) is
 * killed with SIGKILL and restarted on the same port while messages fall due. Every write Redis acknowledged
 * survives; nothing of it is lost, nothing is early, and no more is delivered twice than the relay held in flight.
 */
@Tag("faults")
class RedisRestartTest {

    static final long DOWN_MS = 3_000;
    static final int THREADS = 2;
    /**
     * Batch size of the relays under test: small, so that the duplicate bound below stays under the messages sent
     * (at the default batch of 1,000 the bound allowed every message twice).
     */
    static final int BATCH = 50;

    /** Most entries one relay may hold popped and unsettled: threads x batch-size x InFlightBudget.BATCHES_OF_DATA. */
    static final int WINDOW = THREADS * BATCH * 4;

    private final RelayTestKit kit = new RelayTestKit();
    private PrivateRedis redis;

    @AfterEach
    void cleanUp() {
        try {
            if (redis != null) {
                redis.close();
            }
        } finally {
            kit.close();
        }
    }

    @Test
    void relayReconnectsAfterARedisRestartAndLosesNothingRedisPersisted() throws Exception {
        redis = PrivateRedis.builder()
                .args("--appendonly", "yes", "--appendfsync", "always")
                .start();

        String business = kit.business("redis-restart");
        String exchange = kit.exchange("redis-restart");
        Inbox received = new Inbox(kit.consume(kit.queue(exchange, "due")));
        Map<String, Object> props = new LinkedHashMap<>();
        props.put("spring.data.redis.host", "127.0.0.1");
        props.put("spring.data.redis.port", redis.port());
        props.put("spring.rabbitmq.host", TestServices.rabbit().host());
        props.put("spring.rabbitmq.port", TestServices.rabbit().port());
        props.put("relay.reaper-interval", "500ms");
        RelayTestKit.business(
                props,
                business,
                exchange,
                "due",
                "threads",
                THREADS,
                "batch-size",
                BATCH,
                "lease",
                "5s",
                "publish-timeout",
                "2s");

        List<String> sent = new CopyOnWriteArrayList<>();
        Map<String, Long> due = new ConcurrentHashMap<>();
        AtomicInteger rejected = new AtomicInteger();
        AtomicBoolean producing = new AtomicBoolean(true);
        RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(redis.factory());
        Thread load = new Thread(
                () -> {
                    int i = 0;
                    long start = System.currentTimeMillis();
                    while (producing.get() && System.currentTimeMillis() - start < 30_000) {
                        String body = "rr-" + i++;
                        try {
                            due.put(body, producer.scheduleAfter(business, body, Duration.ofMillis(300)));
                            sent.add(body); // acknowledged by Redis: persisted (appendfsync always)
                        } catch (RuntimeException e) {
                            rejected.incrementAndGet(); // Redis was down: the producer saw the failure
                        }
                        try {
                            Thread.sleep(10);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "redis-restart-load");

        try (RelayProcess relay = RelayProcess.start("redis-restart", props, false, RelayProcess.C1)) {
            // a JVM start takes 20-60 s on a busy 2-core machine
            await().atMost(Duration.ofMinutes(3)).until(() -> relay.started() || !relay.isAlive());
            assertThat(relay.started()).as("relay started; see %s", relay.log()).isTrue();
            load.start();
            // the relay is relaying when the kill begins (a fixed 8 s wait once saw nothing delivered yet on a busy
            // box)
            await().atMost(Duration.ofMinutes(1)).until(() -> received.distinct() >= 200 || !relay.isAlive());
            int beforeKill = received.distinct();
            redis.kill9();
            Thread.sleep(DOWN_MS);
            redis.restart();
            long restarted = System.currentTimeMillis();
            int atRestart = received.distinct();
            await().atMost(Duration.ofSeconds(60)).until(() -> received.distinct() > atRestart);
            long reconnectMs = System.currentTimeMillis() - restarted;
            load.join();
            Deliveries.Report drained = Deliveries.expect(sent)
                    .scheduledDue(due)
                    .quiet(Duration.ofSeconds(2))
                    .await(received, Duration.ofSeconds(60));
            long retried = relay.retriedAfterConfirmTimeout();
            Deliveries.Report report = Deliveries.expect(sent)
                    .scheduledDue(due)
                    .duplicatesAtMost(
                            (int) (WINDOW + retried),
                            "in-flight window " + WINDOW + " x 1 Redis kill -9 + " + retried
                                    + " retried after a confirm timeout")
                    .measure(drained.all());
            assertThat(relay.isAlive()).as("relay alive; see %s", relay.log()).isTrue();
            await().atMost(Duration.ofSeconds(20)).until(() -> inflight(business) == 0);
            FaultFigures.of(
                    "3 Redis kill -9 + restart (AOF)",
                    report,
                    String.format(
                            "deliveredBeforeKill=%d redisDownMs=%d writesRefusedWhileDown=%d firstDeliveryAfterRestartMs=%d",
                            beforeKill, DOWN_MS, rejected.get(), reconnectMs));
            report.assertClean();
            assertThat(reconnectMs)
                    .as("relay delivers again after the restart within")
                    .isLessThan(15_000);
        } finally {
            producing.set(false);
            load.join(5_000);
        }
    }

    private long inflight(String business) {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long total = 0;
        try (RedisConnection c = redis.connection()) {
            for (int shard = 0; shard < 16; shard++) {
                Long n = c.zSetCommands().zCard(DelayQueueKeys.bytes(keys.inflight(shard)));
                total += n == null ? 0 : n;
            }
        }
        return total;
    }
}
