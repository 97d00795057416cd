package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Pop-ahead (a business's {@code lead}) against the real Redis and RabbitMQ: a pop takes the entries due within the
 * lead of its Redis time, and the worker publishes each at its due time, never before it (the relayed-at stamp and
 * the consumer's arrival, one host clock), once; an entry taken ahead is in flight, so a cancel of it answers 0 and
 * it is delivered; two instances, one stopped half-way, lose nothing.
 */
class PopAheadTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void entriesTakenAheadArePublishedAtTheirDueTimeNeverBeforeOnceEach() throws Exception {
        String business = kit.business("ahead");
        String exchange = kit.exchange("ahead");
        BlockingQueue<RelayTestKit.Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", 4, "threads", 2, "lead", "200ms"));
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        Map<String, Long> due = new HashMap<>();
        for (int i = 0; i < 400; i++) {
            String body = "m-" + i;
            long at = now + 700 + i * 7L;
            due.put(body, at);
            producer.schedule(business, body.getBytes(StandardCharsets.UTF_8), Instant.ofEpochMilli(at));
        }

        // an entry in flight before its due time: taken ahead (its attempts record names its original due time)
        AtomicBoolean seenAhead = new AtomicBoolean();
        await("an entry leased before its due time")
                .atMost(Duration.ofSeconds(6))
                .pollInterval(Duration.ofMillis(2))
                .until(() -> {
                    if (leasedAhead(business)) {
                        seenAhead.set(true);
                    }
                    return seenAhead.get();
                });

        Deliveries.Report report =
                Deliveries.expect(due.keySet()).scheduledDue(due).check(received, Duration.ofSeconds(20));
        assertThat(report.delivered()).isEqualTo(400);
        kit.awaitInflightSettled(business, Duration.ofSeconds(5));
    }

    @Test
    void aCancelWithinTheLeadFindsTheEntryInFlightAndItIsStillDelivered() throws Exception {
        String business = kit.business("aheadcancel");
        String exchange = kit.exchange("aheadcancel");
        BlockingQueue<RelayTestKit.Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", 1, "threads", 1, "lead", "1s"));
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        long firstDue = now + 1_500;
        long aheadDue = now + 2_300;
        producer.scheduleById(business, "first", bytes("first"), Instant.ofEpochMilli(firstDue));
        producer.scheduleById(business, "ahead", bytes("ahead"), Instant.ofEpochMilli(aheadDue));

        // the pop at "first"'s due time takes "ahead" too (due within the lead): in flight, not cancellable
        await("'ahead' leased by the pop of 'first'")
                .atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> inFlight(business, "ahead"));
        assertThat(kit.redisNowMs())
                .as("the cancel comes before 'ahead' is due")
                .isLessThan(aheadDue);
        assertThat(producer.cancelById(business, "ahead"))
                .as("cancel within the lead: the entry is in flight")
                .isFalse();

        Deliveries.Report report = Deliveries.expect("first", "ahead")
                .scheduledDue(Map.of("first", firstDue, "ahead", aheadDue))
                .check(received, Duration.ofSeconds(10));
        assertThat(report.delivered()).isEqualTo(2);
    }

    /**
     * A raw ZADD's fractional score taken ahead is due at the next whole ms: published then (its x-delay-due-at says
     * so), never in the ms before it (engine review 2026-11-28, finding 6: the relay truncated the score).
     */
    @Test
    void aFractionalScoreTakenAheadIsPublishedAtTheNextWholeMillisecond() throws Exception {
        String business = kit.business("aheadfrac");
        String exchange = kit.exchange("aheadfrac");
        BlockingQueue<RelayTestKit.Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", 1, "threads", 1, "lead", "1s"));
        long now = kit.redisNowMs();
        long fracDue = now + 1_200;
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(DelayQueueKeys.forBusiness(business).shard(0)), fracDue + 0.5, bytes("frac"));
        }
        // announced on K:wake: the pop at its due time takes "frac" too (due within the lead)
        kit.producer().schedule(business, bytes("first"), Instant.ofEpochMilli(now + 700));

        List<RelayTestKit.Received> all =
                RelayTestKit.collect(received, 2, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(all).extracting(RelayTestKit.Received::text).containsExactly("first", "frac");
        RelayTestKit.Received frac = all.get(1);
        assertThat(frac.header(RelayHeaders.DUE_AT)).isEqualTo(fracDue + 1);
        assertThat(frac.header(RelayHeaders.RELAYED_AT))
                .as("not before ceil(score)")
                .isGreaterThanOrEqualTo(fracDue + 1);
    }

    @Test
    void twoInstancesPoppingAheadOneStoppedHalfWayLoseNothing() throws Exception {
        String business = kit.business("aheadfleet");
        String exchange = kit.exchange("aheadfleet");
        BlockingQueue<RelayTestKit.Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> properties = RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", 8, "threads", 2, "lead", "100ms");
        ConfigurableApplicationContext first = kit.startRelay(properties);
        kit.startRelay(properties);
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        Map<String, Long> due = new HashMap<>();
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            String body = "f-" + i;
            long at = now + 500 + i * 3L;
            due.put(body, at);
            bodies.add(body);
            producer.schedule(business, bytes(body), Instant.ofEpochMilli(at));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> received.size() >= 300);
        // a graceful stop half-way: what it leased ahead is published at its time and acked, or left to the lease
        first.close();

        Deliveries.Report report = Deliveries.expect(bodies).scheduledDue(due).check(received, Duration.ofSeconds(20));
        assertThat(report.delivered()).isEqualTo(1_000);
        kit.awaitInflightSettled(business, Duration.ofSeconds(5));
    }

    /** Whether some leased entry's attempts record names an original due time after Redis time now. */
    private boolean leasedAhead(String business) {
        long now = kit.redisNowMs();
        try (RedisConnection c = kit.redis()) {
            for (String key : kit.keysOf(business)) {
                if (!key.endsWith("}:attempts")) {
                    continue;
                }
                Map<byte[], byte[]> records = c.hashCommands().hGetAll(key.getBytes(StandardCharsets.UTF_8));
                if (records == null) {
                    continue;
                }
                for (byte[] record : records.values()) {
                    String[] parts = new String(record, StandardCharsets.UTF_8).split(":", 3);
                    if (parts.length == 3 && !parts[2].isEmpty() && Long.parseLong(parts[1]) > now) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private boolean inFlight(String business, String id) {
        try (RedisConnection c = kit.redis()) {
            for (String key : kit.keysOf(business)) {
                if (key.endsWith("}:inflight")
                        && c.zSetCommands().zScore(key.getBytes(StandardCharsets.UTF_8), bytes(id)) != null) {
                    return true;
                }
            }
        }
        return false;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
