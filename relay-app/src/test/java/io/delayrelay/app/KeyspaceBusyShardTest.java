package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.support.KeyspaceNotifications;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A shard written more than 100 times a second is polled every 10 ms instead of heard: its keyspace channel is
 * unsubscribed (each notification costs the relay a wake-up and Redis a write), an entry written there due at once
 * is still picked up within milliseconds, and once the writes stop the shard is heard again within the recheck
 * interval (5 s). The {@code delay.relay.shards.polled} gauge reads 1 while it is polled and 0 once it is heard
 * again. max-idle and the safety sweep are 10 minutes, so only a notification or the busy poll can make an
 * entry written after the start-up sweep arrive. Each test runs its own Redis with notify-keyspace-events Kz.
 */
class KeyspaceBusyShardTest {

    static final int SHARDS = 4;
    /** A write due now to a polled shard arrives within this on a loaded 2-core box (the poll is every 10 ms). */
    static final Duration PICK_UP = Duration.ofSeconds(1);

    /** Its own Redis with the notifications on: a relay of another test never sees the setting change. */
    private final PrivateRedis redis = PrivateRedis.start("Kz");

    private final RelayTestKit kit = new RelayTestKit(new TestServices.Endpoint("127.0.0.1", redis.port()));
    private final KeyspaceNotifications notifications = new KeyspaceNotifications(kit);

    @AfterEach
    void cleanUp() {
        kit.close();
        redis.close();
    }

    @Test
    void aBusyShardIsPolledInsteadOfHeardAndHeardAgainOnceItCalmsDown() throws Exception {
        String business = kit.business("kbusy");
        String exchange = kit.exchange("kbusy");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        Map<String, Object> p = RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", SHARDS, "max-idle", "10m");
        p.put("relay.wake.safety-sweep", "10m");
        ConfigurableApplicationContext relay = kit.startRelay(p);
        MeterRegistry meters = relay.getBean(MeterRegistry.class);
        await("every shard heard")
                .atMost(Duration.ofSeconds(5))
                .until(() -> subscribers(keys, 0) == 1 && subscribers(keys, 1) == 1);
        assertThat(polled(meters, business))
                .as("no shard polled while all are quiet")
                .isEqualTo(0.0);

        // shard 0 written ~400 times a second, entries due in an hour (nothing to deliver)
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicLong written = new AtomicLong();
        Thread writer = new Thread(() -> {
            byte[] key = keys.shard(0).getBytes(StandardCharsets.UTF_8);
            try (RedisConnection c = kit.redis()) {
                double due = System.currentTimeMillis() + 3_600_000.0;
                while (writing.get()) {
                    c.zSetCommands()
                            .zAdd(key, due, ("far-" + written.incrementAndGet()).getBytes(StandardCharsets.UTF_8));
                    LockSupport.parkNanos(2_500_000);
                }
            }
        });
        writer.start();
        try {
            await("shard 0 polled: its channel unsubscribed")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> subscribers(keys, 0) == 0);
            assertThat(subscribers(keys, 1)).as("a quiet shard is still heard").isEqualTo(1);
            // polled (the gauge set) before its channel is unsubscribed: exactly 1 by now
            assertThat(polled(meters, business))
                    .as("shards polled: the busy one")
                    .isEqualTo(1.0);

            String busy = zaddDueNow(keys, 0, "due now on the busy shard");
            List<Received> first = RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(300));
            assertThat(first).extracting(Received::text).containsExactly(busy);
            assertPickedUpWithinBound(first);
            assertThat(subscribers(keys, 0)).as("still polled while it is busy").isZero();
            assertThat(polled(meters, business))
                    .as("shards polled while it is busy")
                    .isEqualTo(1.0);
        } finally {
            writing.set(false);
            writer.join();
        }
        assertThat(written.get()).as("writes that made it busy").isGreaterThan(200);

        // calm again: heard within the recheck interval (5 s) plus a check
        await("shard 0 heard again").atMost(Duration.ofSeconds(8)).until(() -> subscribers(keys, 0) == 1);
        // its channel is subscribed just before its poll interval is cleared: the gauge follows within a moment
        await("no shard polled once it is heard again")
                .atMost(Duration.ofSeconds(1))
                .untilAsserted(() -> assertThat(polled(meters, business)).isEqualTo(0.0));
        String calm = zaddDueNow(keys, 0, "due now once heard again");
        List<Received> second = RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(second).extracting(Received::text).containsExactly(calm);
        assertPickedUpWithinBound(second);
        try (RedisConnection c = kit.redis()) {
            assertThat(c.zSetCommands().zCard(keys.shard(0).getBytes(StandardCharsets.UTF_8)))
                    .as("the far-future entries are all still scheduled")
                    .isEqualTo(written.get());
        }
    }

    /** The business's polled-shards gauge ({@code delay_relay_shards_polled}). */
    private static double polled(MeterRegistry meters, String business) {
        return meters.get(RelayMeterNames.SHARDS_POLLED)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .gauge()
                .value();
    }

    private String zaddDueNow(DelayQueueKeys keys, int shard, String text) {
        return notifications.zaddDueNow(keys, shard, text);
    }

    private static void assertPickedUpWithinBound(List<Received> all) {
        KeyspaceNotifications.assertPickedUpWithin(all, PICK_UP);
    }

    private long subscribers(DelayQueueKeys keys, int shard) {
        return notifications.subscribers(keys, SHARDS).get(shard);
    }
}
