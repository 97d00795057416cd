package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.config.BusinessSpecResolver;
import io.delayrelay.app.ops.DeadLetters;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.mock.env.MockEnvironment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Drives the relay's Lua scripts (through {@link ShardStore}) against the real Redis in the interleavings that lost
 * entries or message ids before leases had owners (issue 11, defects 1, 2 and 4). Every step is a script call made
 * by the test, in a fixed order: no worker threads, no sleeps.
 */
class LeaseOwnershipTest {

    private static final String ID = "order-1";

    private final RelayTestKit kit = new RelayTestKit();
    private final ShardStore store = new ShardStore(kit.redisFactory());
    private final RedisDelayedMessageProducer producer = kit.producer();
    private final String business = kit.business("lease");
    private final BusinessSpec spec = spec(business, "30s", "10s", "1ms", 5);
    private final DelayQueueKeys keys = spec.keys();
    private final int shard = ShardSelector.shardOf(ID.getBytes(StandardCharsets.UTF_8), spec.shards());

    @BeforeEach
    void recordShardCount() {
        new TopologyStore(kit.redisFactory()).reshard(spec, 0); // producers hash into the count K:meta records
    }

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void ackOfAFirstLeaseLeavesTheCopyScheduledWhileInFlightAndItsPayload() {
        scheduleNow("v1");
        PopResult first = store.pop(spec, Round.of(shard), List.of()).single();
        assertThat(first.entries()).hasSize(1);

        scheduleNow("v2"); // a producer re-schedules the id while its first delivery is in flight
        PopResult second = store.pop(spec, Round.of(shard), List.of()).single();
        assertThat(second.entries())
                .as("a member in flight is not leased a second time")
                .isEmpty();

        assertThat(store.ack(spec, List.of(new ShardStore.Ack(shard, first.token(), members(), true))))
                .isEqualTo(1);
        assertThat(score(keys.shard(shard)))
                .as("the new schedule is still in its shard")
                .isNotNull();
        assertThat(payload()).isEqualTo("v2");

        PopResult third = store.pop(spec, Round.of(shard), List.of()).single();
        assertThat(third.entries()).hasSize(1);
        assertThat(text(third.entries().get(0).payload())).isEqualTo("v2");
        // the second delivery fails to publish: it waits for a retry, nothing is lost
        store.release(spec, shard, third.token(), members());
        assertThat(score(keys.inflight(shard)))
                .as("waiting in inflight for its retry")
                .isNotNull();
        assertThat(record()).as("no lease holder while it waits").endsWith(":");
        assertThat(payload()).isEqualTo("v2");
    }

    @Test
    void staleAckOrRequeueOfAnEarlierLeaseDoesNotTouchTheCurrentLease() {
        scheduleNow("v1");
        PopResult first = store.pop(spec, Round.of(shard), List.of()).single();
        store.ack(spec, List.of(new ShardStore.Ack(shard, first.token(), members(), true)));
        scheduleNow("v2");
        PopResult second = store.pop(spec, Round.of(shard), List.of()).single();
        assertThat(second.entries()).hasSize(1);

        // the first batch's settle arrives again (e.g. a retried settle): it owns nothing any more
        assertThat(store.ack(spec, List.of(new ShardStore.Ack(shard, first.token(), members(), true))))
                .isZero();
        assertThat(store.requeue(spec, shard, first.token(), members(), 1, "stale")
                        .dead())
                .isEmpty();
        assertThat(score(keys.inflight(shard)))
                .as("the current lease is untouched")
                .isNotNull();
        assertThat(payload()).isEqualTo("v2");

        assertThat(store.ack(spec, List.of(new ShardStore.Ack(shard, second.token(), members(), true))))
                .isEqualTo(1);
        assertThat(kit.keysOf(business))
                .as("everything settled, nothing left behind")
                .noneMatch(k -> k.endsWith(":payloads") || k.endsWith(":inflight") || k.endsWith(":attempts"));
    }

    @Test
    void failedInFlightCopyIsRetriedAtItsRetryTimeAndTheNewScheduleAtItsOwnTime() {
        scheduleNow("v1");
        PopResult first = store.pop(spec, Round.of(shard), List.of()).single();
        long originalDue = first.entries().get(0).dueAtMs();
        long later = kit.redisNowMs() + 60_000;
        producer.scheduleById(business, ID, "v2", Instant.ofEpochMilli(later));

        store.requeue(spec, shard, first.token(), members(), spec.retry().maxAttempts(), "nack");

        assertThat(score(keys.shard(shard)))
                .as("the new schedule keeps its time")
                .isEqualTo((double) later);
        Double retryAt = score(keys.inflight(shard));
        assertThat(retryAt)
                .as("the failed copy waits for its own retry")
                .isNotNull()
                .isLessThan((double) later);
        PopResult retried = await().atMost(Duration.ofSeconds(2))
                .until(() -> store.pop(spec, Round.of(shard), List.of()).single(), p -> !p.isEmpty());
        assertThat(retried.entries().get(0).dueAtMs())
                .as("same original due time, same message id")
                .isEqualTo(originalDue);
        assertThat(retried.entries().get(0).attempts()).isEqualTo(1);
        store.ack(spec, List.of(new ShardStore.Ack(shard, retried.token(), members(), true)));
        assertThat(score(keys.shard(shard))).as("still scheduled for later").isEqualTo((double) later);
        assertThat(payload()).isEqualTo("v2");
    }

    @Test
    void lateAckAfterTheReaperTookTheLeaseBackKeepsTheRetryWithItsOriginalDueTime() {
        // below what the configuration accepts (lease > lead + publish-timeout + 2 x round + 150ms): built directly
        BusinessSpec shortLease = spec.toBuilder()
                .lease(Duration.ofMillis(2))
                .publishTimeout(Duration.ofMillis(1))
                .build();
        scheduleNow("v1");
        PopResult first = store.pop(shortLease, Round.of(shard), List.of()).single();
        long originalDue = first.entries().get(0).dueAtMs();
        await().atMost(Duration.ofSeconds(2))
                .until(() -> store.requeueExpired(shortLease, shard, 10).requeued() == 1);

        assertThat(store.ack(shortLease, List.of(new ShardStore.Ack(shard, first.token(), members(), true))))
                .as("the late ack owns nothing")
                .isZero();

        PopResult again = await().atMost(Duration.ofSeconds(2))
                .until(() -> store.pop(shortLease, Round.of(shard), List.of()).single(), p -> !p.isEmpty());
        PopResult.Entry entry = again.entries().get(0);
        assertThat(entry.dueAtMs())
                .as("original due time kept, so the AMQP message id is")
                .isEqualTo(originalDue);
        assertThat(entry.attempts()).isEqualTo(1);
        assertThat(DueBatch.messageId(business, entry.member(), entry.dueAtMs()))
                .isEqualTo(DueBatch.messageId(business, first.entries().get(0).member(), originalDue));
    }

    @Test
    void deadLetterKeepsItsPayloadWhenTheSameIdIsScheduledAgainAndDelivered() {
        scheduleNow("v1");
        PopResult first = store.pop(spec, Round.of(shard), List.of()).single();
        assertThat(store.requeue(spec, shard, first.token(), members(), 1, "returned: NO_ROUTE")
                        .dead())
                .hasSize(1);

        scheduleNow("v2");
        PopResult second = store.pop(spec, Round.of(shard), List.of()).single();
        store.ack(spec, List.of(new ShardStore.Ack(shard, second.token(), members(), true)));
        assertThat(payload()).as("the dead letter still needs its payload").isEqualTo("v2");

        DeadLetters deadLetters = new DeadLetters(ByteRedisTemplates.create(kit.redisFactory()));
        assertThat(deadLetters.replay(spec, spec.shards(), ID)).isEqualTo(1);
        PopResult replayed = store.pop(spec, Round.of(shard), List.of()).single();
        assertThat(replayed.entries()).hasSize(1);
        assertThat(text(replayed.entries().get(0).payload()))
                .as("replayed with its payload, not the bare id")
                .isEqualTo("v2");
        store.ack(spec, List.of(new ShardStore.Ack(shard, replayed.token(), members(), true)));
        assertThat(payload()).as("settled and in no key any more: payload gone").isNull();
    }

    @Test
    void replayThatCannotWriteLeavesTheDeadLetterInPlace() {
        scheduleNow("v1");
        PopResult first = store.pop(spec, Round.of(shard), List.of()).single();
        store.requeue(spec, shard, first.token(), members(), 1, "returned: NO_ROUTE");
        try (RedisConnection c = kit.redis()) {
            c.stringCommands().set(bytes(keys.shard(shard)), bytes("written by someone else"));
        }
        DeadLetters deadLetters = new DeadLetters(ByteRedisTemplates.create(kit.redisFactory()));
        assertThatThrownBy(() -> deadLetters.replay(spec, spec.shards(), ID))
                .rootCause()
                .hasMessageContaining("WRONGTYPE");
        assertThat(score(keys.dead(shard))).as("still a dead letter").isNotNull();
        assertThat(payload()).isEqualTo("v1");
    }

    private void scheduleNow(String payload) {
        producer.scheduleById(business, ID, payload, Instant.ofEpochMilli(kit.redisNowMs()));
    }

    private static List<byte[]> members() {
        return List.of(bytes(ID));
    }

    private Double score(String key) {
        try (RedisConnection c = kit.redis()) {
            return c.zSetCommands().zScore(bytes(key), bytes(ID));
        }
    }

    private String record() {
        try (RedisConnection c = kit.redis()) {
            return text(c.hashCommands().hGet(bytes(keys.attempts(shard)), bytes(ID)));
        }
    }

    private String payload() {
        try (RedisConnection c = kit.redis()) {
            byte[] value = c.hashCommands().hGet(bytes(keys.payloads(shard)), bytes(ID));
            return value == null ? null : text(value);
        }
    }

    static BusinessSpec spec(String business, String lease, String publishTimeout, String retryDelay, int maxAttempts) {
        String prefix = "relay.businesses." + business + ".";
        MockEnvironment env = new MockEnvironment()
                .withProperty(prefix + "exchange", "test.lease")
                .withProperty(prefix + "routing-key", "due")
                .withProperty(prefix + "shards", "4")
                .withProperty(prefix + "lease", lease)
                .withProperty(prefix + "publish-timeout", publishTimeout)
                .withProperty(prefix + "retry-delay", retryDelay)
                .withProperty(prefix + "retry-delay-max", retryDelay)
                .withProperty(prefix + "max-attempts", Integer.toString(maxAttempts));
        return BusinessSpecResolver.resolve(env, List.of()).get(0);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
