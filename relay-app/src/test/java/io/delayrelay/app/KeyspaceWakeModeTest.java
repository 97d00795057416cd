package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Finding 4 of the engine review (2026-11-24): keyspace notifications that stop after start (here CONFIG SET
 * notify-keyspace-events "", as a Redis restart without the setting in redis.conf or a failover leaves them) are
 * noticed within about a second: one WARN naming the fix, the wake-mode gauge says polling, plain-ZADD entries are
 * picked up within max-idle; when they are back, one INFO and keyspace wake-ups again. Runs its own redis-server on
 * a free port.
 */
@ExtendWith(OutputCaptureExtension.class)
@Tag("timing")
class KeyspaceWakeModeTest {

    private static final String STOPPED = "keyspace notifications stopped";
    private static final String BACK = "keyspace notifications are on again";

    private final RelayTestKit kit = new RelayTestKit();
    private PrivateRedis redis;

    @AfterEach
    void cleanUp() {
        kit.close();
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void notificationsThatStopAreNoticedWithinASecondPolledAtMaxIdleAndFollowedBackOn(CapturedOutput output)
            throws Exception {
        redis = PrivateRedis.start("Kz");
        String business = kit.business("ksmode");
        String exchange = kit.exchange("ksmode");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "max-idle", "200ms");
        props.put("spring.data.redis.port", redis.port());
        props.put("relay.wake.safety-sweep", "10m");
        ConfigurableApplicationContext relay = kit.startRelay(props);
        await().atMost(Duration.ofSeconds(10)).until(() -> output.getAll().contains("keyspace notifications on"));
        MeterRegistry meters = relay.getBean(MeterRegistry.class);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        assertThat(wakeMode(meters, business)).isEqualTo("keyspace");

        long stoppedAt = System.nanoTime();
        setNotify("");
        await().atMost(Duration.ofSeconds(3)).until(() -> output.getAll().contains(STOPPED));
        long noticedMs = (System.nanoTime() - stoppedAt) / 1_000_000;
        assertThat(noticedMs).as("noticed within about a second").isLessThan(1_500);
        assertThat(output.getAll()).contains("notify-keyspace-events Kz' in redis.conf");
        assertThat(wakeMode(meters, business)).isEqualTo("polling");

        long due = redis.nowMs();
        zadd(keys.shard(5), "written while polling", due);
        List<Received> polled = RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ZERO);
        assertThat(polled).extracting(Received::text).containsExactly("written while polling");
        assertThat(polled.get(0).header("x-delay-relayed-at") - due)
                .as("picked up within max-idle (200 ms) + margin, not at the safety sweep (10 min)")
                .isLessThan(1_000);

        long checksBefore = redis.calls("config|get");
        await().pollDelay(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3)).until(() -> true);
        long checksPerSecond = (redis.calls("config|get") - checksBefore) / 2;
        assertThat(checksPerSecond)
                .as("CONFIG GET per second: one check per 500 ms")
                .isBetween(1L, 3L);

        setNotify("Kz");
        await().atMost(Duration.ofSeconds(3)).until(() -> output.getAll().contains(BACK));
        assertThat(wakeMode(meters, business)).isEqualTo("keyspace");
        await().pollDelay(Duration.ofMillis(500)).atMost(Duration.ofSeconds(1)).until(() -> true);
        long back = redis.nowMs();
        zadd(keys.shard(9), "woken again", back);
        List<Received> woken = RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ofMillis(300));
        assertThat(woken).extracting(Received::text).containsExactly("woken again");
        assertThat(woken.get(0).header("x-delay-relayed-at") - back)
                .as("woken by its notification (polling is off again: idle workers sleep up to 10 min)")
                .isLessThan(1_000);

        System.out.printf(
                "wake-mode figures: stop noticed after %d ms; plain ZADD while polling relayed %d ms after due; "
                        + "woken again %d ms after due; CONFIG GET %d/s%n",
                noticedMs,
                polled.get(0).header("x-delay-relayed-at") - due,
                woken.get(0).header("x-delay-relayed-at") - back,
                checksPerSecond);
        String log = output.getAll();
        assertThat(log.split(STOPPED, -1)).as("one WARN").hasSize(2);
        assertThat(log.split(BACK, -1)).as("one INFO").hasSize(2);
    }

    /** "keyspace" or "polling": the wake-mode gauge whose value is 1. */
    private static String wakeMode(MeterRegistry meters, String business) {
        double keyspace = gauge(meters, business, RelayMeterNames.MODE_KEYSPACE);
        double polling = gauge(meters, business, RelayMeterNames.MODE_POLLING);
        assertThat(keyspace + polling).as("exactly one mode is 1").isEqualTo(1.0);
        return keyspace == 1.0 ? "keyspace" : "polling";
    }

    private static double gauge(MeterRegistry meters, String business, String mode) {
        return meters.get(RelayMeterNames.WAKE_MODE)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_MODE, mode)
                .gauge()
                .value();
    }

    private void setNotify(String flags) {
        try (RedisConnection c = redis.connection()) {
            c.serverCommands().setConfig("notify-keyspace-events", flags);
        }
    }

    private void zadd(String key, String member, long score) {
        try (RedisConnection c = redis.connection()) {
            c.zSetCommands().zAdd(key.getBytes(StandardCharsets.UTF_8), score, member.getBytes(StandardCharsets.UTF_8));
        }
    }
}
