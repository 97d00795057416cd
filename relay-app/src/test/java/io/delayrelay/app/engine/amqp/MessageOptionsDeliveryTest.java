package io.delayrelay.app.engine.amqp;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ScheduleOptions;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Per-message options (contract v2) and the late policy through a running relay, against the real Redis and
 * RabbitMQ: the producer's headers arrive unchanged beside the relay's own, the body is the message byte for byte, a
 * message past its expiry is dead with reason expired and never published, an x-delay-* header written into Redis
 * by hand is ignored and counted, an unreadable envelope is published whole and counted, and on-late: drop removes
 * an entry past max-lateness with its payload and counts it.
 */
class MessageOptionsDeliveryTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void headersArriveUnchangedAndAnExpiredMessageIsDeadNotPublished() throws Exception {
        String business = kit.business("options");
        String exchange = kit.exchange("options");
        BlockingQueue<Received> inbox = kit.consume(kit.queue(exchange, "due"));
        ConfigurableApplicationContext relay =
                kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        MeterRegistry registry = relay.getBean(MeterRegistry.class);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        long now = kit.redisNowMs();

        kit.producer()
                .scheduleByIdAfter(
                        business,
                        "order-1",
                        "{\"order\":1}".getBytes(StandardCharsets.UTF_8),
                        Duration.ofMillis(300),
                        ScheduleOptions.create()
                                .expiresAfterDue(Duration.ofMinutes(1))
                                .header("traceparent", traceparent)
                                .header("tracestate", "vendor=abc")
                                .header("tenant", "acme ü"));
        kit.producer()
                .scheduleById(
                        business,
                        "code-1",
                        "one-time code".getBytes(StandardCharsets.UTF_8),
                        Instant.ofEpochMilli(now - 5_000),
                        ScheduleOptions.create().expiresAt(Instant.ofEpochMilli(now - 1_000)));
        // written by hand into Redis, bypassing the scripts' checks: a relay header and an unreadable envelope
        byte[] forged =
                concat(new byte[] {(byte) 0xFF}, "DR2::2:14:x-delay-due-at1:05:hello5:worldthe body".getBytes());
        byte[] broken = concat(new byte[] {(byte) 0xFF}, "DR2::9:truncated".getBytes());
        try (RedisConnection c = kit.redis()) {
            int shardForged = io.delayrelay.api.ShardSelector.shardOf("forged".getBytes(), 16);
            int shardBroken = io.delayrelay.api.ShardSelector.shardOf("broken".getBytes(), 16);
            c.hashCommands().hSet(keys.payloads(shardForged).getBytes(), "forged".getBytes(), forged);
            c.zSetCommands().zAdd(keys.shard(shardForged).getBytes(), now, "forged".getBytes());
            c.hashCommands().hSet(keys.payloads(shardBroken).getBytes(), "broken".getBytes(), broken);
            c.zSetCommands().zAdd(keys.shard(shardBroken).getBytes(), now, "broken".getBytes());
        }

        List<Received> all = RelayTestKit.collect(inbox, 3, Duration.ofSeconds(20), Duration.ofMillis(1500));

        assertThat(all)
                .extracting(r -> r.headers().get(RelayHeaders.ID))
                .containsExactlyInAnyOrder("order-1", "forged", "broken");
        Received order = byId(all, "order-1");
        assertThat(order.text()).isEqualTo("{\"order\":1}");
        assertThat(order.headers())
                .containsEntry("traceparent", traceparent)
                .containsEntry("tracestate", "vendor=abc")
                .containsEntry("tenant", "acme ü")
                .containsEntry(RelayHeaders.BUSINESS, business)
                .containsEntry(RelayHeaders.ATTEMPT, 1);
        assertThat(order.header(RelayHeaders.RELAYED_AT)).isGreaterThanOrEqualTo(order.header(RelayHeaders.DUE_AT));
        Received forgedOut = byId(all, "forged");
        assertThat(forgedOut.text()).isEqualTo("the body");
        assertThat(forgedOut.headers()).containsEntry("hello", "world");
        assertThat(forgedOut.header(RelayHeaders.DUE_AT))
                .as("the relay's own header, not the forged 0")
                .isEqualTo(now);
        assertThat(byId(all, "broken").body())
                .as("an unreadable envelope is published whole")
                .isEqualTo(broken);

        int codeShard = io.delayrelay.api.ShardSelector.shardOf("code-1".getBytes(), 16);
        try (RedisConnection c = kit.redis()) {
            String reason = new String(
                    c.hashCommands().hGet(keys.deadReasons(codeShard).getBytes(), "code-1".getBytes()),
                    StandardCharsets.UTF_8);
            assertThat(reason)
                    .isEqualTo("expired: past its expiry " + (now - 1_000) + " (due: " + (now - 5_000)
                            + ") (attempts: 0)");
        }
        assertThat(count(registry, RelayMeterNames.DEAD_LETTERED, business, "expired"))
                .isEqualTo(1.0);
        assertThat(count(registry, RelayMeterNames.OPTIONS_IGNORED, business, "relay-header"))
                .isEqualTo(1.0);
        assertThat(count(registry, RelayMeterNames.OPTIONS_IGNORED, business, "malformed"))
                .isEqualTo(1.0);
    }

    @Test
    void onLateDropRemovesTheEntryWithItsPayloadAndCountsIt() throws Exception {
        String business = kit.business("droplate");
        String exchange = kit.exchange("droplate");
        BlockingQueue<Received> inbox = kit.consume(kit.queue(exchange, "due"));
        long now = kit.redisNowMs();
        kit.producer().scheduleById(business, "stale", "too late", Instant.ofEpochMilli(now - 10_000));
        ConfigurableApplicationContext relay = kit.startRelay(RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "max-lateness", "2s", "on-late", "drop"));
        // scheduled once the relay runs: a start under load can take longer than max-lateness
        kit.producer().scheduleByIdAfter(business, "fresh", "on time", Duration.ofMillis(300));
        MeterRegistry registry = relay.getBean(MeterRegistry.class);

        List<Received> all = RelayTestKit.collect(inbox, 1, Duration.ofSeconds(20), Duration.ofMillis(1000));

        assertThat(all).extracting(Received::text).containsExactly("on time");
        await().atMost(Duration.ofSeconds(5))
                .until(() -> count(registry, RelayMeterNames.DROPPED, business, "expired") == 1.0);
        assertThat(kit.keysOf(business))
                .as("nothing left: no dead letter, no payload")
                .noneMatch(k -> k.endsWith(":dead") || k.endsWith(":payloads") || k.endsWith(":inflight"));
        assertThat(count(registry, RelayMeterNames.DEAD_LETTERED, business, "expired"))
                .isZero();
    }

    private static Received byId(List<Received> all, String id) {
        return all.stream()
                .filter(r -> id.equals(r.headers().get(RelayHeaders.ID)))
                .findFirst()
                .orElseThrow();
    }

    private static double count(MeterRegistry registry, String name, String business, String reason) {
        return registry.get(name)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_REASON, reason)
                .counter()
                .count();
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = new byte[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
