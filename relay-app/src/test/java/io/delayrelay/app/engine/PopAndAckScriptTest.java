package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import io.delayrelay.app.engine.EngineFixture.CountingEvents;
import io.delayrelay.app.engine.EngineFixture.HoldingPublisher;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.DataType;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.app.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The commands pop.lua and ack.lua save (issue 12: Redis commands per message) without giving up a guarantee: a
 * full batch answers "more is due" without reading what is next, a caller that knows its shard is due skips the
 * emptiness probe, and ack.lua lets its write order (not TYPE checks) make a key of the wrong type fail harmlessly.
 */
class PopAndAckScriptTest {

    private final EngineFixture f = new EngineFixture();

    @AfterEach
    void cleanUp() {
        f.close();
    }

    @Test
    void aFullBatchSaysMoreIsDueAndAPopThatKnowsItIsDueTakesTheRest() {
        BusinessSpec spec = f.spec("full").batchSize(2).build();
        long now = f.kit.redisNowMs();
        for (int i = 0; i < 3; i++) {
            f.zadd(spec, 0, "entry-" + i, now - 1_000 + i);
        }

        PopResult full = f.store.pop(spec, Round.of(0), List.of()).single();
        assertThat(full.entries()).hasSize(2);
        assertThat(full.nextDueMs()).as("more is due: now").isEqualTo(full.redisNowMs());
        assertThat(full.moreDue()).isTrue();

        PopResult rest = f.store
                .pop(spec, Round.of(0, true, Integer.MAX_VALUE, 0), List.of())
                .single();
        assertThat(rest.entries()).extracting(e -> text(e.member())).containsExactly("entry-2");
        assertThat(rest.nextDueMs())
                .as("what is next: the earliest lease deadline")
                .isEqualTo(full.redisNowMs() + spec.timing().lease().toMillis());
        assertThat(rest.moreDue()).isFalse();

        f.store.ack(
                spec,
                List.of(new ShardStore.Ack(
                        0,
                        full.token(),
                        full.entries().stream().map(PopResult.Entry::member).toList(),
                        true)));
        f.store.ack(spec, List.of(new ShardStore.Ack(0, rest.token(), List.of(bytes("entry-2")), true)));
        PopResult empty = f.store
                .pop(spec, Round.of(0, true, Integer.MAX_VALUE, 0), List.of())
                .single();
        assertThat(empty.entries()).isEmpty();
        assertThat(empty.nextDueMs())
                .as("an empty shard, even without the probe")
                .isEqualTo(-1);
        assertThat(empty.expiredLeases()).isZero();
        PopResult probed = f.store
                .pop(spec, Round.of(0, false, Integer.MAX_VALUE, 0), List.of())
                .single();
        assertThat(probed.redisNowMs())
                .as("the probe answers an empty shard without TIME")
                .isZero();
        assertThat(probed.nextDueMs()).isEqualTo(-1);
    }

    @Test
    void aPopReportsTheExpiredLeasesItSawAndLeavesThemToRequeue() {
        BusinessSpec shortLease = f.spec("report").lease(Duration.ofMillis(1)).build();
        f.zadd(shortLease, 0, "leased", f.kit.redisNowMs() - 1_000);
        PopResult lost = f.store.pop(shortLease, Round.of(0), List.of()).single();
        assertThat(lost.entries()).hasSize(1);

        PopResult seen = await().atMost(Duration.ofSeconds(2))
                .until(() -> f.store.pop(shortLease, Round.of(0), List.of()).single(), p -> p.expiredLeases() == 1);
        assertThat(seen.entries())
                .as("an expired lease is not popped again as is")
                .isEmpty();
        assertThat(seen.nextDueMs())
                .as("looked at again after the recheck delay, not at once")
                .isEqualTo(seen.redisNowMs() + ShardStore.BLOCKED_RECHECK_MS);
        assertThat(f.store
                        .pop(shortLease, Round.of(0, true, Integer.MAX_VALUE, 0), List.of())
                        .single()
                        .expiredLeases())
                .as("reported with or without the probe")
                .isEqualTo(1);
        assertThat(f.store.requeueExpired(shortLease, 0, 10).requeued()).isEqualTo(1);
        assertThat(f.store
                        .pop(shortLease, Round.of(0, true, Integer.MAX_VALUE, 0), List.of())
                        .single()
                        .expiredLeases())
                .isZero();
    }

    @Test
    void anAckOfMembersPoppedWithoutPayloadStillKeepsThePayloadInvariant() {
        BusinessSpec spec = f.spec("ack-bare").build();
        f.zadd(spec, 0, "bare", f.kit.redisNowMs() - 1_000);
        PopResult first = f.store.pop(spec, Round.of(0), List.of()).single();
        assertThat(first.entries().get(0).payload()).isNull();
        assertThat(f.store.ack(spec, List.of(new ShardStore.Ack(0, first.token(), List.of(bytes("bare")), false))))
                .as("no payload hash: settled without the payload bookkeeping")
                .isEqualTo(1);
        assertThat(f.inflight(spec)).isZero();

        f.zadd(spec, 0, "bare", f.kit.redisNowMs() - 1_000);
        PopResult second = f.store.pop(spec, Round.of(0), List.of()).single();
        scheduleById(spec, "bare", "scheduled again by id while in flight");
        f.store.ack(spec, List.of(new ShardStore.Ack(0, second.token(), List.of(bytes("bare")), false)));
        assertThat(payload(spec, "bare"))
                .as("the new schedule's payload is kept")
                .isEqualTo("scheduled again by id while in flight");

        PopResult third = f.store.pop(spec, Round.of(0), List.of()).single();
        try (RedisConnection c = f.kit.redis()) {
            c.zSetCommands().zAdd(bytes(spec.keys().shard(0)), f.kit.redisNowMs() + 60_000, bytes("bare"));
            c.zSetCommands().zRem(bytes(spec.keys().shard(0)), bytes("bare")); // scheduled and cancelled in flight
        }
        f.store.ack(spec, List.of(new ShardStore.Ack(0, third.token(), List.of(bytes("bare")), false)));
        assertThat(payload(spec, "bare"))
                .as("in no key any more: its payload is not left behind")
                .isNull();
    }

    @Test
    void anAckThatMeetsAPayloadsKeyOfTheWrongTypeSettlesTheConfirmedLeaseAndNamesTheKey() {
        BusinessSpec spec = f.spec("ack-type").build();
        scheduleById(spec, "id-1", "body-1");
        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();
        assertThat(popped.entries()).hasSize(1);
        breakPayloads(spec);

        assertThatThrownBy(() ->
                        f.store.ack(spec, List.of(new ShardStore.Ack(0, popped.token(), List.of(bytes("id-1")), true))))
                .rootCause()
                .hasMessageContaining("WRONGTYPE")
                .hasMessageContaining(spec.keys().payloads(0))
                .hasMessageContaining("1 confirmed member(s) were settled");
        assertSettledAndKeyUntouched(spec);
    }

    @Test
    void anAckThatMeetsAnInflightKeyOfTheWrongTypeChangesNothing() {
        BusinessSpec spec = f.spec("ack-inflight").build();
        scheduleById(spec, "id-1", "body-1");
        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();
        try (RedisConnection c = f.kit.redis()) {
            c.keyCommands().del(bytes(spec.keys().inflight(0)));
            c.stringCommands().set(bytes(spec.keys().inflight(0)), bytes("not a zset"));
        }

        assertThatThrownBy(() ->
                        f.store.ack(spec, List.of(new ShardStore.Ack(0, popped.token(), List.of(bytes("id-1")), true))))
                .rootCause()
                .hasMessageContaining("WRONGTYPE");
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.hashCommands().hGet(bytes(spec.keys().attempts(0)), bytes("id-1")))
                    .as("the lease record is still there")
                    .isNotNull();
            assertThat(c.hashCommands().hGet(bytes(spec.keys().payloads(0)), bytes("id-1")))
                    .as("and the payload")
                    .isEqualTo(bytes("body-1"));
        }
    }

    /** The same met by the engine: the error is counted, and the confirmed entry is settled, not redelivered. */
    @Test
    void aWrongTypePayloadsKeyMetWhenSettlingIsCountedAndNothingIsRedelivered() {
        BusinessSpec spec = f.spec("settle-type").build();
        scheduleById(spec, "id-1", "body-1");
        HoldingPublisher publisher = new HoldingPublisher();
        CountingEvents events = new CountingEvents();
        f.start(spec, publisher, events);
        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.pending.size() == 1);
        assertThat(publisher.published.get(0).bodyAsString()).isEqualTo("body-1");
        breakPayloads(spec);

        publisher.pending.get(0).complete(List.of(PublishOutcome.CONFIRMED));

        await().atMost(Duration.ofSeconds(10)).until(() -> events.errors.get() == 1);
        assertSettledAndKeyUntouched(spec);
        assertThat(publisher.published).as("published once").hasSize(1);
    }

    private void assertSettledAndKeyUntouched(BusinessSpec spec) {
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.zSetCommands().zCard(bytes(spec.keys().inflight(0))))
                    .as("the confirmed lease is settled")
                    .isZero();
            assertThat(c.hashCommands().hGet(bytes(spec.keys().attempts(0)), bytes("id-1")))
                    .isNull();
            assertThat(c.keyCommands().type(bytes(spec.keys().payloads(0))))
                    .as("the foreign key is left as it is")
                    .isEqualTo(DataType.STRING);
        }
    }

    private void scheduleById(BusinessSpec spec, String id, String payload) {
        try (RedisConnection c = f.kit.redis()) {
            c.hashCommands().hSet(bytes(spec.keys().payloads(0)), bytes(id), bytes(payload));
        }
        f.zadd(spec, 0, id, f.kit.redisNowMs() - 1_000);
    }

    private String payload(BusinessSpec spec, String id) {
        try (RedisConnection c = f.kit.redis()) {
            byte[] value = c.hashCommands().hGet(bytes(spec.keys().payloads(0)), bytes(id));
            return value == null ? null : text(value);
        }
    }

    private void breakPayloads(BusinessSpec spec) {
        try (RedisConnection c = f.kit.redis()) {
            c.keyCommands().del(bytes(spec.keys().payloads(0)));
            c.stringCommands().set(bytes(spec.keys().payloads(0)), bytes("not a hash"));
        }
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
