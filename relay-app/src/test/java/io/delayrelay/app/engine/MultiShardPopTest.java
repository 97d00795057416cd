package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.app.engine.EngineFixture.bytes;
import static io.delayrelay.app.engine.EngineFixture.members;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * One pop of several shards (pop.lua with its keys repeated per shard) against the real Redis: it carries the due
 * entries of every shard it names, never one before its due time, under one lease token, within the call's batch
 * size; a shard whose key holds another type fails the call before anything moved, and the worker then pops the
 * shards one by one, quarantines the bad one and delivers the others.
 */
class MultiShardPopTest {

    private final EngineFixture fx = new EngineFixture();

    @AfterEach
    void cleanUp() {
        fx.close();
    }

    @Test
    void onePopCarriesTheDueEntriesOfSeveralShardsAndNoneBeforeItsDueTime() {
        BusinessSpec spec = fx.spec("multipop").shards(4).batchSize(10).build();
        long now = fx.kit.redisNowMs();
        fx.zadd(spec, 0, "a0", now - 30);
        fx.zadd(spec, 0, "b0", now - 10);
        fx.zadd(spec, 1, "a1", now - 20);
        fx.zadd(spec, 1, "later1", now + 60_000);
        fx.zadd(spec, 3, "a3", now - 5);

        List<PopResult> results = fx.store
                .pop(spec, Round.of(new int[] {0, 1, 2, 3}, new boolean[] {false, true, false, false}, 0), List.of())
                .results();

        assertThat(results).hasSize(4);
        assertThat(members(results.get(0))).containsExactly("a0", "b0");
        assertThat(members(results.get(1))).containsExactly("a1");
        assertThat(results.get(1).nextDueMs())
                .as("next: the lease deadline, before the entry not due yet")
                .isEqualTo(results.get(1).redisNowMs() + spec.timing().lease().toMillis());
        assertThat(results.get(2).entries()).isEmpty();
        assertThat(results.get(2).redisNowMs())
                .as("an empty shard costs no TIME")
                .isZero();
        assertThat(results.get(2).nextDueMs()).isEqualTo(-1);
        assertThat(members(results.get(3))).containsExactly("a3");
        Set<String> tokens = new HashSet<>();
        for (PopResult r : results) {
            tokens.add(r.token());
            for (PopResult.Entry e : r.entries()) {
                assertThat(e.dueAtMs()).as("never early").isLessThanOrEqualTo(r.redisNowMs());
            }
        }
        assertThat(tokens).as("one lease token for the call").hasSize(1);
        assertThat(fx.inflight(spec)).isEqualTo(4);
        try (RedisConnection c = fx.kit.redis()) {
            assertThat(c.zSetCommands().zCard(EngineFixture.bytes(spec.keys().shard(1))))
                    .isEqualTo(1);
        }

        // one ack call settles the shards' entries, each under its token
        long acked = fx.store.ack(
                spec,
                List.of(
                        new ShardStore.Ack(0, results.get(0).token(), List.of(bytes("a0"), bytes("b0")), false),
                        new ShardStore.Ack(1, results.get(1).token(), List.of(bytes("a1")), false),
                        new ShardStore.Ack(3, "another token", List.of(bytes("a3")), false)));
        assertThat(acked).as("a3 is leased under another token: left alone").isEqualTo(3);
        assertThat(fx.inflight(spec)).isEqualTo(1);
    }

    @Test
    void theCallsBatchSizeIsSharedEarliestShardFirstAndALeftOutShardStaysDue() {
        BusinessSpec spec = fx.spec("multipop-batch").shards(3).batchSize(3).build();
        long now = fx.kit.redisNowMs();
        for (int i = 0; i < 2; i++) {
            fx.zadd(spec, 2, "s2-" + i, now - 100 + i);
            fx.zadd(spec, 0, "s0-" + i, now - 50 + i);
            fx.zadd(spec, 1, "s1-" + i, now - 10 + i);
        }
        List<PopResult> results = fx.store
                .pop(spec, Round.of(new int[] {2, 0, 1}, new boolean[3], 0), List.of())
                .results();
        assertThat(members(results.get(0))).containsExactly("s2-0", "s2-1");
        assertThat(members(results.get(1))).containsExactly("s0-0");
        assertThat(results.get(1).moreDue()).isTrue();
        assertThat(results.get(2).skipped())
                .as("nothing left of the call's batch")
                .isTrue();
        assertThat(results.get(2).entries()).isEmpty();
        assertThat(fx.inflight(spec)).isEqualTo(3);
    }

    @Test
    void aShardOfTheWrongTypeFailsTheCallBeforeAnythingMoved() {
        BusinessSpec spec = fx.spec("multipop-wrongtype").shards(3).build();
        long now = fx.kit.redisNowMs();
        fx.zadd(spec, 0, "a0", now - 10);
        fx.breakShard(spec, 1);
        fx.zadd(spec, 2, "a2", now - 10);
        assertThatThrownBy(() -> fx.store
                        .pop(spec, Round.of(new int[] {0, 1, 2}, new boolean[] {true, true, true}, 0), List.of())
                        .results())
                .hasStackTraceContaining("WRONGTYPE");
        assertThat(fx.inflight(spec))
                .as("the shards before the bad one were not leased")
                .isZero();
    }

    @Test
    void theWorkerPopsDueShardsTogetherAndQuarantinesAWrongTypeShardWhileTheOthersFlow() {
        BusinessSpec spec =
                fx.spec("multipop-worker").shards(4).batchSize(100).maxIdle(Duration.ofMillis(100)).build().toBuilder()
                        .linger(Duration.ofMillis(20))
                        .build();
        EngineFixture.ConfirmingPublisher publisher = new EngineFixture.ConfirmingPublisher();
        fx.breakShard(spec, 2);
        long due = fx.kit.redisNowMs() + 400;
        for (int shard : new int[] {0, 1, 3}) {
            for (int i = 0; i < 3; i++) {
                fx.zadd(spec, shard, "m" + shard + "-" + i, due + i);
            }
        }
        BusinessRelay relay = fx.start(spec, publisher, new EngineFixture.CountingEvents());

        await().atMost(Duration.ofSeconds(5)).until(() -> publisher.published.size() == 9);
        assertThat(relay.quarantinedShards()).containsExactly(2);
        for (DueMessage m : publisher.published) {
            assertThat(m.poppedAtMs()).as("never early: %s", m.bodyAsString()).isGreaterThanOrEqualTo(m.dueAtMs());
        }
        // due within the linger of each other: after the quarantine, one pop carried all three shards' entries
        assertThat(fx.store.multiPops).anySatisfy(shards -> assertThat(shards).containsExactly(0, 1, 3));
        await().atMost(Duration.ofSeconds(5)).until(() -> fx.inflight(spec) == 0);
    }
}
