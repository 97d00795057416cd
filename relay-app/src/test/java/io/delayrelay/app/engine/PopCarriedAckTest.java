package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;

import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.app.engine.EngineFixture.bytes;
import static io.delayrelay.app.engine.EngineFixture.members;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Acks carried by the next pop (pop.lua's carried ack sections, {@link AckCarrier}) against the real Redis. They are
 * settled by ack.lua's own settle (lib/settle.lua, included by both scripts): lease token checked, payload invariant
 * kept, before the pop reads anything. A section whose keys hold the wrong type fails alone. A relay's acks ride on
 * its pops, or go alone within the linger when no pop comes.
 */
class PopCarriedAckTest {

    private final EngineFixture fx = new EngineFixture();

    @AfterEach
    void cleanUp() {
        fx.close();
    }

    @Test
    void aPopSettlesTheCarriedAcksFirstAndHandsOutAMemberTheyFreed() {
        BusinessSpec spec = fx.spec("carry").shards(2).batchSize(10).build();
        long now = fx.kit.redisNowMs();
        fx.zadd(spec, 0, "a", now - 20);
        fx.zadd(spec, 0, "b", now - 10);
        fx.zadd(spec, 1, "c", now - 10);
        List<PopResult> first = fx.store
                .pop(spec, Round.of(new int[] {0, 1}, new boolean[] {false, false}, 0), List.of())
                .results();
        // "a" scheduled again while its delivery is in flight: held back until that delivery settles
        fx.zadd(spec, 0, "a", now - 5);
        fx.zadd(spec, 1, "d", now - 5);

        ShardStore.Popped popped = fx.store.pop(
                spec,
                Round.of(new int[] {0, 1}, new boolean[] {true, true}, 0),
                List.of(
                        new ShardStore.Ack(0, first.get(0).token(), List.of(bytes("a"), bytes("b")), false),
                        new ShardStore.Ack(1, "another token", List.of(bytes("c")), false)));

        assertThat(popped.settled())
                .as("c is leased under another token: left alone")
                .isEqualTo(2);
        assertThat(popped.failed()).isEmpty();
        assertThat(members(popped.results().get(0)))
                .as("a's delivery was settled first, so its new schedule is handed out by the same call")
                .containsExactly("a");
        assertThat(members(popped.results().get(1))).containsExactly("d");
        assertThat(popped.results().get(0).token())
                .as("the pop's own token")
                .isNotEqualTo(first.get(0).token());
        assertThat(fx.inflight(spec)).as("c (not acked), a and d (just leased)").isEqualTo(3);
    }

    @Test
    void aCarriedAckKeepsThePayloadInvariantAsAckLuaDoes() {
        BusinessSpec spec = fx.spec("carry-payload").build();
        long now = fx.kit.redisNowMs();
        scheduleById(spec, "id-1", "body-1", now - 10);
        scheduleById(spec, "id-2", "body-2", now - 10);
        PopResult leased = fx.store.pop(spec, Round.of(0), List.of()).single();
        assertThat(leased.entries()).hasSize(2);
        // id-2 is scheduled again while in flight: its payload must stay
        scheduleById(spec, "id-2", "body-2 again", now + 60_000);

        ShardStore.Popped popped = fx.store.pop(
                spec,
                Round.of(0),
                List.of(new ShardStore.Ack(0, leased.token(), List.of(bytes("id-1"), bytes("id-2")), true)));

        assertThat(popped.settled()).isEqualTo(2);
        assertThat(popped.results().get(0).entries()).isEmpty();
        assertThat(payload(spec, "id-1"))
                .as("delivered and in no key: forgotten")
                .isNull();
        assertThat(payload(spec, "id-2")).isEqualTo("body-2 again");
        assertThat(fx.inflight(spec)).isZero();
    }

    @Test
    void aCarriedAckOnAShardOfTheWrongTypeFailsAloneAndThePopGoesOn() {
        BusinessSpec spec = fx.spec("carry-wrongtype").shards(2).build();
        long now = fx.kit.redisNowMs();
        fx.zadd(spec, 0, "a", now - 10);
        fx.zadd(spec, 1, "b", now - 10);
        PopResult a = fx.store.pop(spec, Round.of(0), List.of()).single();
        PopResult b = fx.store.pop(spec, Round.of(1), List.of()).single();
        try (RedisConnection c = fx.kit.redis()) {
            byte[] attempts = bytes(spec.keys().attempts(1));
            c.keyCommands().del(attempts);
            c.stringCommands().set(attempts, bytes("not a hash"));
        }
        fx.zadd(spec, 0, "c", now - 5);

        ShardStore.Popped popped = fx.store.pop(
                spec,
                Round.of(0, true, Integer.MAX_VALUE, 0),
                List.of(
                        new ShardStore.Ack(1, b.token(), List.of(bytes("b")), false),
                        new ShardStore.Ack(0, a.token(), List.of(bytes("a")), false)));

        assertThat(popped.failed()).extracting(ShardStore.Ack::shard).containsExactly(1);
        assertThat(popped.errors()).singleElement().asString().contains("WRONGTYPE");
        assertThat(popped.settled()).as("the other section settled").isEqualTo(1);
        assertThat(members(popped.results().get(0))).containsExactly("c");
    }

    @Test
    void theCarrierHandsWaitingAcksToTheNextPopAndSendsThemAloneWhenNoPopComesWithinTwiceTheLinger() {
        BusinessSpec spec = fx.spec("carrier").shards(2).build().toBuilder()
                .linger(Duration.ofMillis(500))
                .build();
        AckCarrier carrier =
                new AckCarrier(fx.store, new EventReporter(new EngineFixture.CountingEvents()), Runnable::run);
        long now = fx.kit.redisNowMs();
        fx.zadd(spec, 0, "a", now - 10);
        fx.zadd(spec, 1, "b", now - 10);
        PopResult a =
                fx.store.pop(spec, Round.of(0, true, 10, 0), carrier.take()).single();
        carrier.carry(spec, List.of(new ShardStore.Ack(0, a.token(), List.of(bytes("a")), false)));
        assertThat(carrier.waiting()).isEqualTo(1);

        PopResult b =
                fx.store.pop(spec, Round.of(1, true, 10, 0), carrier.take()).single();
        assertThat(fx.store.carryingPops.get())
                .as("the pop of shard 1 carried shard 0's ack")
                .isEqualTo(1);
        assertThat(carrier.waiting()).isZero();
        assertThat(fx.inflight(spec)).as("a settled, b just leased").isEqualTo(1);

        long handedAt = System.nanoTime();
        carrier.carry(spec, List.of(new ShardStore.Ack(1, b.token(), List.of(bytes("b")), false)));
        await().atMost(Duration.ofSeconds(2)).until(() -> fx.inflight(spec) == 0);
        assertThat(Duration.ofNanos(System.nanoTime() - handedAt))
                .as("no pop came: alone, not before twice the linger")
                .isGreaterThanOrEqualTo(Duration.ofMillis(1_000));
        assertThat(fx.store.carryingPops.get()).isEqualTo(1);
    }

    @Test
    void aRelaysAcksAreAllSettledWhetherCarriedOrAloneAndEachEntryGoesOutOnce() {
        BusinessSpec spec =
                fx.spec("carry-relay").shards(4).batchSize(100).maxIdle(Duration.ofMillis(100)).build().toBuilder()
                        .linger(Duration.ofMillis(20))
                        .build();
        EngineFixture.ConfirmingPublisher publisher = new EngineFixture.ConfirmingPublisher();
        long start = fx.kit.redisNowMs() + 300;
        int entries = 60;
        for (int r = 0; r < entries; r++) {
            fx.zadd(spec, r % 4, "m" + r, start + r * 5L);
        }
        fx.start(spec, publisher, new EngineFixture.CountingEvents());

        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published.size() == entries);
        for (DueMessage m : publisher.published) {
            assertThat(m.poppedAtMs()).as("never early: %s", m.bodyAsString()).isGreaterThanOrEqualTo(m.dueAtMs());
        }
        assertThat(publisher.bodies()).doesNotHaveDuplicates();
        // the last round's acks have no pop to ride on: alone, within twice the linger (margin for a loaded box)
        await().atMost(Duration.ofSeconds(2)).until(() -> fx.inflight(spec) == 0);
        assertThat(publisher.published).as("nothing redelivered").hasSize(entries);
    }

    @Test
    void ackLuaAndPopLuaBothRunTheOneSettleFragmentOnce() {
        String fragment = LuaScripts.text("io/delayrelay/app/lua/lib/settle.lua");
        assertThat(fragment).contains("local function settle(");
        for (String script : List.of("ack", "pop")) {
            String text = LuaScripts.text("io/delayrelay/app/lua/" + script + ".lua");
            assertThat(text.split(Pattern.quote(fragment), -1))
                    .as("%s.lua includes lib/settle.lua once", script)
                    .hasSize(2);
            assertThat(text.split(Pattern.quote("local function settle("), -1))
                    .as("%s.lua has no settle of its own", script)
                    .hasSize(2);
        }
    }

    private void scheduleById(BusinessSpec spec, String id, String payload, long dueMs) {
        fx.zadd(spec, 0, id, dueMs);
        try (RedisConnection c = fx.kit.redis()) {
            c.hashCommands().hSet(bytes(spec.keys().payloads(0)), bytes(id), bytes(payload));
        }
    }

    private String payload(BusinessSpec spec, String id) {
        try (RedisConnection c = fx.kit.redis()) {
            byte[] value = c.hashCommands().hGet(bytes(spec.keys().payloads(0)), bytes(id));
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }
}
