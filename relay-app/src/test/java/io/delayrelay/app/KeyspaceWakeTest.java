package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import com.rabbitmq.client.GetResponse;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Keyspace notifications as the wake source: an entry written by a plain ZADD (no relay-api wake-up) is picked up
 * without polling when Redis has them on, and by polling at max-idle when it has not. Each test runs its own
 * redis-server (the shared one's notify-keyspace-events belong to everybody) on a free port.
 */
@ExtendWith(OutputCaptureExtension.class)
@Tag("timing")
class KeyspaceWakeTest {

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
    void aPlainZaddEntryIsPickedUpWithoutPollingWhenNotificationsAreOn(CapturedOutput output) throws Exception {
        startRedis("Kz");
        Fixture f = startRelay("ksnotify", "relay.wake.safety-sweep", "10m");
        await().atMost(Duration.ofSeconds(10)).until(() -> output.getAll().contains("keyspace notifications on"));

        // max-idle and the safety sweep are 10 minutes: only the notification can make these arrive.
        long now = redisNow();
        zadd(f.keys.shard(3), "due now", now);
        zadd(f.keys.shard(11), "due in one second", now + 1_000);

        List<Received> all = RelayTestKit.collect(f.received, 2, Duration.ofSeconds(15), Duration.ofMillis(300));
        assertThat(all).extracting(Received::text).containsExactly("due now", "due in one second");
        assertThat(all.get(1).header("x-delay-relayed-at"))
                .as("not before its due time")
                .isGreaterThanOrEqualTo(now + 1_000);
        assertThat(config()).as("the relay left Redis' settings alone").isEqualTo("zK");
    }

    /**
     * A notified write costs a read of the shard's head, not a pop: entries written seconds ahead are not popped
     * until they fall due, and then their shard is popped once, without polling and without a look at the other
     * shards (the workers pop only what they know to be due).
     */
    @Test
    void aWriteOfAFutureEntryIsPeekedAtNotPoppedAndItLeavesWhenDue(CapturedOutput output) throws Exception {
        startRedis("Kz");
        // no seat renewal (an EVALSHA of seat.lua every second) during the count: renewals are not pops
        Fixture f = startRelay("kspeek", "relay.wake.safety-sweep", "10m", "relay.division.seat-ttl", "10m");
        await().atMost(Duration.ofSeconds(10)).until(() -> output.getAll().contains("keyspace notifications on"));
        awaitStartUpSweepOver();
        long popsBefore = calls("evalsha");
        long peeksBefore = calls("zrange");

        long now = redisNow();
        long due = now + 2_500;
        for (int i = 0; i < 50; i++) {
            zadd(f.keys.shard(3), "later-" + i, due);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> redisNow() >= now + 1_500);
        assertThat(calls("evalsha") - popsBefore)
                .as("pops before the entries are due")
                .isZero();
        assertThat(calls("zrange") - peeksBefore).as("peeks at shard 3's head").isPositive();

        List<Received> all = RelayTestKit.collect(f.received, 50, Duration.ofSeconds(15), Duration.ofMillis(300));
        assertThat(all).hasSize(50);
        assertThat(all).extracting(r -> r.header("x-delay-relayed-at")).allMatch(at -> at >= due);
        assertThat(all)
                .extracting(Received::text)
                .containsExactlyInAnyOrderElementsOf(java.util.stream.IntStream.range(0, 50)
                        .mapToObj(i -> "later-" + i)
                        .toList());
        assertThat(calls("evalsha") - popsBefore)
                .as("one pop of shard 3 and one ack: none of the 15 other shards was popped")
                .isEqualTo(2);
    }

    /**
     * Popping ahead (lead 1 s), a shard whose known head is 900 ms away is not popped for 900 ms: a plain ZADD due in
     * 100 ms to that shard is heard, peeked at and popped at its own time, not with the head (engine review
     * 2026-11-28, finding 3: the peek was skipped for a head anywhere within the lead, so it came ~800 ms late).
     */
    @Test
    void aPlainZaddDueBeforeItsShardsKnownHeadIsDeliveredOnTimeWhilePoppingAhead(CapturedOutput output)
            throws Exception {
        startRedis("Kz");
        Fixture f = startRelay("ksahead", "relay.wake.safety-sweep", "10m", "relay.businesses.%s.lead", "1s");
        await().atMost(Duration.ofSeconds(10)).until(() -> output.getAll().contains("keyspace notifications on"));
        awaitStartUpSweepOver();
        long peeksBefore = calls("zrange");

        long headDue = redisNow() + 1_000;
        zadd(f.keys.shard(3), "head", headDue);
        // the head's peek has lowered shard 3's known due time to headDue
        await().atMost(Duration.ofSeconds(1))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> calls("zrange") > peeksBefore);
        await().atMost(Duration.ofSeconds(1))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> redisNow() >= headDue - 900);
        long earlyDue = redisNow() + 100;
        zadd(f.keys.shard(3), "early", earlyDue);

        List<Received> all = RelayTestKit.collect(f.received, 2, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(all).extracting(Received::text).containsExactly("early", "head");
        long earlyAt = all.get(0).header("x-delay-relayed-at");
        assertThat(earlyAt).as("never before its due time").isGreaterThanOrEqualTo(earlyDue);
        assertThat(earlyAt - earlyDue)
                .as("at its own due time, not with the head %d ms later", headDue - earlyDue)
                .isLessThan(300);
        assertThat(all.get(1).header("x-delay-relayed-at")).isGreaterThanOrEqualTo(headDue);
    }

    /**
     * The same without a lead: with a linger of 500 ms, a plain ZADD due before its shard's known head (450 ms away)
     * is popped at its own due time plus the linger, not at the head's (it waited up to twice the linger before).
     */
    @Test
    void aPlainZaddDueBeforeItsShardsKnownHeadWaitsOnlyItsOwnLinger(CapturedOutput output) throws Exception {
        startRedis("Kz");
        Fixture f = startRelay("kslinger", "relay.wake.safety-sweep", "10m", "relay.businesses.%s.linger", "500ms");
        await().atMost(Duration.ofSeconds(10)).until(() -> output.getAll().contains("keyspace notifications on"));
        awaitStartUpSweepOver();
        long peeksBefore = calls("zrange");

        long headDue = redisNow() + 500;
        zadd(f.keys.shard(5), "head", headDue);
        await().atMost(Duration.ofSeconds(1))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> calls("zrange") > peeksBefore);
        await().atMost(Duration.ofSeconds(1))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> redisNow() >= headDue - 450);
        long earlyDue = redisNow() + 20;
        zadd(f.keys.shard(5), "early", earlyDue);

        List<Received> all = RelayTestKit.collect(f.received, 2, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(all).extracting(Received::text).containsExactly("early", "head");
        long earlyAt = all.get(0).header("x-delay-relayed-at");
        assertThat(earlyAt - earlyDue)
                .as(
                        "its own linger (500 ms), not the head's due time plus the linger (%d ms)",
                        headDue + 500 - earlyDue)
                .isBetween(0L, 800L);
    }

    /**
     * A delivery the broker refuses (a full queue with reject-publish nacks it) waits in {@code {K:i}:inflight} for its
     * retry, where no notification announces it: the relay that put it back looks at the shard after the retry delay,
     * not at the lease deadline or the safety sweep (both far away here).
     */
    @Test
    void aNackedDeliveryIsRetriedAfterTheRetryDelayWithoutASweep(CapturedOutput output) throws Exception {
        startRedis("Kz");
        String business = kit.business("ksretry");
        String exchange = kit.exchange("ksretry");
        String queue = "test.ksretry.bounded." + business;
        kit.channel()
                .queueDeclare(queue, false, false, false, Map.of("x-max-length", 1, "x-overflow", "reject-publish"));
        try {
            kit.channel().queueBind(queue, exchange, "due");
            nackedAndRetried(business, exchange, queue, output);
        } finally {
            kit.channel().queueDelete(queue);
        }
    }

    private void nackedAndRetried(String business, String exchange, String queue, CapturedOutput output) {
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "max-idle",
                "10m",
                "lease",
                "10m",
                "threads",
                1,
                "max-attempts",
                50,
                "retry-delay",
                "200ms",
                "retry-delay-max",
                "200ms");
        props.put("spring.data.redis.port", redis.port());
        props.put("relay.wake.safety-sweep", "10m");
        kit.startRelay(props);
        await().atMost(Duration.ofSeconds(10)).until(() -> output.getAll().contains("keyspace notifications on"));
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);

        long due = redisNow();
        zadd(keys.shard(2), "first", due);
        zadd(keys.shard(2), "second", due);
        GetResponse first =
                await().atMost(Duration.ofSeconds(10)).until(() -> kit.channel().basicGet(queue, true), r -> r != null);
        GetResponse second = await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> kit.channel().basicGet(queue, true), r -> r != null);

        assertThat(List.of(text(first), text(second)))
                .as("one of the two found the queue full and was nacked")
                .containsExactlyInAnyOrder("first", "second");
        Map<String, Object> headers = second.getProps().getHeaders();
        assertThat(((Number) headers.get(RelayHeaders.ATTEMPT)).intValue())
                .as("the nacked one came again")
                .isGreaterThan(1);
        assertThat(((Number) headers.get("x-delay-relayed-at")).longValue() - due)
                .as("retried every 200 ms, not at the lease deadline or the safety sweep (10 minutes)")
                .isLessThan(5_000);
    }

    private static String text(GetResponse response) {
        return new String(response.getBody(), StandardCharsets.UTF_8);
    }

    @Test
    void withNotificationsOffAPlainZaddEntryIsPickedUpByPollingAndOneWarningSaysWhatToConfigure(CapturedOutput output)
            throws Exception {
        startRedis("");
        Fixture f = startRelay("kspoll", "relay.businesses.%s.max-idle", "200ms");

        zadd(f.keys.shard(5), "polled", redisNow());

        List<Received> all = RelayTestKit.collect(f.received, 1, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(all).extracting(Received::text).containsExactly("polled");
        String log = output.getAll();
        assertThat(log).contains("CONFIG SET notify-keyspace-events Kz").contains("relay.wake.configure-redis=true");
        assertThat(log.split("keyspace notifications unavailable", -1))
                .as("one warning")
                .hasSize(2);
        assertThat(config()).as("CONFIG SET only when allowed").isEmpty();
    }

    /**
     * A producer that announces its write on K:wake in a shape the relay cannot read still gets its entry relayed at
     * once (every shard is swept), not after max-idle (10 minutes here; no notifications).
     */
    @Test
    void aMalformedWakeUpSweepsEveryShard() throws Exception {
        startRedis("");
        Fixture f = startRelay("ksbadwake");
        awaitStartUpSweepOver();

        zadd(f.keys.shard(7), "announced badly", redisNow());
        try (RedisConnection c = redis.connection()) {
            c.publish(f.keys.wake().getBytes(StandardCharsets.UTF_8), "7-now".getBytes(StandardCharsets.UTF_8));
        }

        List<Received> all = RelayTestKit.collect(f.received, 1, Duration.ofSeconds(5), Duration.ofMillis(100));
        assertThat(all).extracting(Received::text).containsExactly("announced badly");
    }

    @Test
    void whenAllowedTheRelaySetsTheNotificationFlagsItNeeds(CapturedOutput output) throws Exception {
        startRedis("");
        Fixture f = startRelay("ksconfig", "relay.wake.configure-redis", "true", "relay.wake.safety-sweep", "10m");
        await().atMost(Duration.ofSeconds(10)).until(() -> output.getAll().contains("keyspace notifications on"));
        assertThat(config()).contains("K").contains("z");

        zadd(f.keys.shard(0), "woken", redisNow());

        List<Received> all = RelayTestKit.collect(f.received, 1, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(all).extracting(Received::text).containsExactly("woken");
    }

    private record Fixture(DelayQueueKeys keys, BlockingQueue<Received> received) {}

    /** A relay on this test's Redis, max-idle 10 minutes unless the settings say otherwise. */
    private Fixture startRelay(String prefix, String... settings) {
        String business = kit.business(prefix);
        String exchange = kit.exchange(prefix);
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "max-idle", "10m");
        props.put("spring.data.redis.port", redis.port());
        for (int i = 0; i < settings.length; i += 2) {
            props.put(String.format(settings[i], business), settings[i + 1]);
        }
        kit.startRelay(props);
        return new Fixture(DelayQueueKeys.forBusiness(business), received);
    }

    private void startRedis(String notify) throws Exception {
        redis = PrivateRedis.start(notify);
    }

    private long redisNow() {
        return redis.nowMs();
    }

    private void zadd(String key, String member, long score) {
        try (RedisConnection c = redis.connection()) {
            c.zSetCommands().zAdd(key.getBytes(StandardCharsets.UTF_8), score, member.getBytes(StandardCharsets.UTF_8));
        }
    }

    /** The relay popped every shard once at start and is idle: no pop for 300 ms. */
    private void awaitStartUpSweepOver() {
        long[] last = {-1};
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(300))
                .alias("the start-up sweep is over")
                .until(() -> {
                    long calls = calls("evalsha");
                    boolean quiet = calls > 0 && calls == last[0];
                    last[0] = calls;
                    return quiet;
                });
    }

    /** Calls of a command on this test's Redis so far (INFO commandstats). */
    private long calls(String command) {
        return redis.calls(command);
    }

    private String config() {
        try (RedisConnection c = redis.connection()) {
            return c.serverCommands().getConfig("notify-keyspace-events").getProperty("notify-keyspace-events");
        }
    }
}
