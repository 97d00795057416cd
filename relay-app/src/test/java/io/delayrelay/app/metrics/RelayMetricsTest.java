package io.delayrelay.app.metrics;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStringCommands.SetOption;
import org.springframework.data.redis.core.types.Expiration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class RelayMetricsTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void relayedCounterAndLagHistogramMatchTheDeliveredMessages() throws Exception {
        String business = kit.business("metrics");
        String exchange = kit.exchange("metrics");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        ConfigurableApplicationContext relay =
                kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "threads", 2));
        RedisDelayedMessageProducer producer = kit.producer();
        // due 2 s and more in the past: a lag the timer must show, not a figure near zero that anything would pass
        long now = kit.redisNowMs();
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < 25; i++) {
            producer.schedule(business, "m" + i, Instant.ofEpochMilli(now - 2_000 - i * 10L));
            sent.add("m" + i);
        }

        List<Received> all =
                Deliveries.expect(sent).check(received, Duration.ofSeconds(10)).all();
        MeterRegistry registry = relay.getBean(MeterRegistry.class);
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(registry.get(RelayMeterNames.RELAYED)
                        .tag(RelayMeterNames.TAG_BUSINESS, business)
                        .counter()
                        .count())
                .isEqualTo(25.0));
        Timer lag = registry.get(RelayMeterNames.LAG)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .timer();
        assertThat(lag.count()).isEqualTo(25);
        // the relay measures confirm time - due on Redis time: between pop - due and arrival - due
        long popLag = all.stream()
                .mapToLong(r -> r.header(RelayHeaders.RELAYED_AT) - r.header(RelayHeaders.DUE_AT))
                .max()
                .orElseThrow();
        long arrivalLag = all.stream()
                .mapToLong(r -> r.receivedAtMs() - r.header(RelayHeaders.DUE_AT))
                .max()
                .orElseThrow();
        assertThat(popLag).as("max lag at the pop").isGreaterThanOrEqualTo(2_240);
        // the pop's instant is Redis TIME read by pop.lua, the confirm's the relay's estimate of Redis time
        // (RedisClock: synced, drifts by a few ms between syncs), hence the 10 ms below the pop's figure
        assertThat(lag.max(TimeUnit.MILLISECONDS))
                .as(
                        "max lag recorded, between the max at the pop (%d ms) - 10 and at arrival (%d ms) + 100",
                        popLag, arrivalLag)
                .isBetween(popLag - 10.0, arrivalLag + 100.0);

        String scrape = relay.getBean(PrometheusMeterRegistry.class).scrape();
        assertThat(scrape)
                .contains("delay_relay_relayed_total{business=\"" + business + "\"} 25.0")
                .contains("delay_relay_lag_seconds_count{business=\"" + business + "\"} 25")
                .contains("delay_relay_lag_seconds_bucket{business=\"" + business + "\",le=\"0.005\"}")
                .contains("delay_relay_lag_seconds_bucket{business=\"" + business + "\",le=\"600.0\"} 25")
                .contains("delay_relay_shards{business=\"" + business + "\"} 16.0")
                .contains("delay_relay_threads{business=\"" + business + "\"} 2.0");
    }

    @Test
    void backlogGaugesShowExactFiguresOfAKnownSet() {
        String business = kit.business("backlog");
        String exchange = kit.exchange("backlog");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        producer.schedule(business, "due-60s", Instant.ofEpochMilli(now - 60_000));
        producer.schedule(business, "due-30s", Instant.ofEpochMilli(now - 30_000));
        producer.schedule(business, "due-10s", Instant.ofEpochMilli(now - 10_000));
        for (int i = 0; i < 5; i++) {
            producer.schedule(business, "later-" + i, Instant.ofEpochMilli(now + 3_600_000));
        }
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(keys.inflight(0)), now + 3_600_000, bytes("leased"));
            c.zSetCommands().zAdd(bytes(keys.dead(1)), now, bytes("dead-1"));
            c.zSetCommands().zAdd(bytes(keys.dead(2)), now, bytes("dead-2"));
        }

        ConfigurableApplicationContext relay = kit.startRelay(RelayTestKit.business(
                with(kit.baseProperties(), "relay.metrics.sample-interval", "100ms"),
                business,
                exchange,
                "due",
                "paused",
                true,
                "threads",
                3));
        MeterRegistry registry = relay.getBean(MeterRegistry.class);

        awaitBacklog(registry, business, 3, 5, 1, 2);
        double overdue = registry.get(RelayMeterNames.OLDEST_OVERDUE)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .gauge()
                .value();
        assertThat(overdue).isBetween(60.0, 70.0);
        assertThat(registry.get(RelayMeterNames.SHARDS)
                        .tag(RelayMeterNames.TAG_BUSINESS, business)
                        .gauge()
                        .value())
                .isEqualTo(16.0);
        assertThat(registry.get(RelayMeterNames.THREADS)
                        .tag(RelayMeterNames.TAG_BUSINESS, business)
                        .gauge()
                        .value())
                .isEqualTo(3.0);
        assertThat(registry.get(RelayMeterNames.PAUSED)
                        .tag(RelayMeterNames.TAG_BUSINESS, business)
                        .gauge()
                        .value())
                .as("paused: true in configuration")
                .isEqualTo(1.0);
        assertThat(relay.getBean(PrometheusMeterRegistry.class).scrape())
                .contains("delay_relay_paused{business=\"" + business + "\"} 1.0")
                .contains("delay_relay_backlog_messages{business=\"" + business + "\",state=\"due\"} 3.0")
                .contains("delay_relay_backlog_messages{business=\"" + business + "\",state=\"scheduled\"} 5.0")
                .contains("delay_relay_oldest_overdue_seconds{business=\"" + business + "\"}");
    }

    @Test
    void oneInstancePerRoundReadsTheShardsAndTheOthersShowTheFiguresItSharedInKBacklog() {
        String business = kit.business("sharedbacklog");
        String exchange = kit.exchange("sharedbacklog");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long now = kit.redisNowMs();
        kit.producer().schedule(business, "due", Instant.ofEpochMilli(now - 1_000));
        kit.producer().schedule(business, "later", Instant.ofEpochMilli(now + 3_600_000));
        byte[] round = bytes(keys.sourceKey() + ":round:backlog");
        try (RedisConnection c = kit.redis()) {
            // another instance holds the sampling round and shared its figures
            c.stringCommands().set(round, bytes("1"), Expiration.seconds(60), SetOption.upsert());
            c.stringCommands()
                    .set(
                            bytes(keys.backlog()),
                            bytes("7 8 9 10 11000 " + now),
                            Expiration.seconds(60),
                            SetOption.upsert());
        }
        ConfigurableApplicationContext relay = kit.startRelay(RelayTestKit.business(
                with(kit.baseProperties(), "relay.metrics.sample-interval", "100ms"),
                business,
                exchange,
                "due",
                "paused",
                true));
        MeterRegistry registry = relay.getBean(MeterRegistry.class);
        awaitBacklog(registry, business, 7, 8, 9, 10);

        try (RedisConnection c = kit.redis()) {
            c.keyCommands().del(round, bytes(keys.backlog()));
        }
        awaitBacklog(registry, business, 1, 1, 0, 0);
        try (RedisConnection c = kit.redis()) {
            assertThat(new String(c.stringCommands().get(bytes(keys.backlog())), StandardCharsets.UTF_8))
                    .as("what this instance read, shared with the others")
                    .startsWith("1 1 0 0 ");
        }
    }

    @Test
    void deadLetteredCounterTagsTheReasonCategory() {
        String business = kit.business("deadmetric");
        String exchange = kit.exchange("deadmetric");
        ConfigurableApplicationContext relay =
                kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "nobody-listens"));
        kit.producer().scheduleAfter(business, "unroutable one", Duration.ZERO);
        kit.producer().scheduleAfter(business, "unroutable two", Duration.ZERO);

        MeterRegistry registry = relay.getBean(MeterRegistry.class);
        await().atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(registry.find(RelayMeterNames.DEAD_LETTERED)
                                .tag(RelayMeterNames.TAG_BUSINESS, business)
                                .tag(RelayMeterNames.TAG_REASON, "unroutable")
                                .counter())
                        .isNotNull()
                        .extracting(c -> c.count())
                        .isEqualTo(2.0));
        assertThat(registry.find(RelayMeterNames.RELAYED)
                        .tag(RelayMeterNames.TAG_BUSINESS, business)
                        .counter()
                        .count())
                .isZero();
    }

    /** Waits until the business's backlog gauges show these counts (due, scheduled, in flight, dead). */
    private static void awaitBacklog(
            MeterRegistry registry, String business, int due, int scheduled, int inflight, int dead) {
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            assertThat(backlog(registry, business, RelayMeterNames.STATE_DUE)).isEqualTo(due);
            assertThat(backlog(registry, business, RelayMeterNames.STATE_SCHEDULED))
                    .isEqualTo(scheduled);
            assertThat(backlog(registry, business, RelayMeterNames.STATE_INFLIGHT))
                    .isEqualTo(inflight);
            assertThat(backlog(registry, business, RelayMeterNames.STATE_DEAD)).isEqualTo(dead);
            assertThat(backlog(registry, business, RelayMeterNames.STATE_COLD))
                    .as("no cold-after: nothing cold")
                    .isZero();
        });
    }

    private static double backlog(MeterRegistry registry, String business, String state) {
        return registry.get(RelayMeterNames.BACKLOG)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_STATE, state)
                .gauge()
                .value();
    }

    private static Map<String, Object> with(Map<String, Object> into, String key, Object value) {
        into.put(key, value);
        return into;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
