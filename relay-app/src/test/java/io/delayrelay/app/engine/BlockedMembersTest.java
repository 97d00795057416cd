package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.engine.EngineFixture.ConfirmingPublisher;
import io.delayrelay.app.engine.EngineFixture.CountingEvents;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.app.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Finding 1 of the engine review (2026-11-24): members scheduled again while their earlier delivery waits for a
 * retry are held back in their shard ("blocked") until that delivery settles. However many of them come first in
 * the shard, the shard's other due entries are delivered at once; and while only blocked entries are due, the shard
 * is popped again when the earliest of them can move, not every {@link ShardStore#BLOCKED_RECHECK_MS}.
 */
class BlockedMembersTest {

    private static final long RETRY_IN_MS = 600_000;

    private final EngineFixture f = new EngineFixture();

    @AfterEach
    void cleanUp() {
        f.close();
    }

    @Test
    void aShardWhoseFirstPagesAreAllWaitingForARetryStillDeliversItsOtherDueEntriesAtOnce() {
        BusinessSpec spec = f.spec("hol").batchSize(2).build();
        long now = f.kit.redisNowMs();
        blocked(spec, 10, now);
        f.zadd(spec, 0, "free", now - 1_000);

        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();

        assertThat(popped.entries())
                .as("10 blocked members (5 pages of batch-size 2) come first; the free entry behind them is taken")
                .extracting(e -> new String(e.member(), StandardCharsets.UTF_8))
                .containsExactly("free");
    }

    @Test
    void whileOnlyBlockedEntriesRemainTheShardIsLookedAtWhenTheEarliestOfThemCanMove() {
        BusinessSpec spec = f.spec("holnext").batchSize(2).build();
        long now = f.kit.redisNowMs();
        blocked(spec, 3, now);

        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();

        assertThat(popped.entries()).isEmpty();
        assertThat(popped.nextDueMs())
                .as("the earliest retry of a blocking delivery (b1's), not now + %d ms", ShardStore.BLOCKED_RECHECK_MS)
                .isEqualTo(now + RETRY_IN_MS + 1_000);
    }

    /**
     * The exec-jar case, on the engine: batch-size 1, four members waiting for their retry and scheduled
     * again by their producer, an unrelated entry due now: it arrives at once, and the shard is not popped every
     * 50 ms afterwards (polling is set to 5 s, so that the count shows the rechecks only).
     */
    @Test
    void anUnrelatedEntryDueNowArrivesAtOnceBehindFourMembersWaitingForTheirRetry() {
        // polling every 5 s (no notifications here): any pop beyond the first is the blocked shard's recheck
        BusinessSpec spec =
                f.spec("holrelay").batchSize(1).maxIdle(Duration.ofSeconds(5)).build();
        long now = f.kit.redisNowMs();
        blocked(spec, 4, now);
        f.zadd(spec, 0, "free", now - 1_000);
        ConfirmingPublisher publisher = new ConfirmingPublisher();
        long started = System.nanoTime();
        f.start(spec, publisher, new CountingEvents());

        await().atMost(Duration.ofSeconds(3)).until(() -> publisher.published.size() == 1);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertThat(tookMs).as("delivered within a second of start").isLessThan(1_000);
        int popsThen = f.store.pops.get();
        await().pollDelay(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2)).until(() -> true);
        assertThat(f.store.pops.get() - popsThen)
                .as("pops in the second after: the blocked shard is not re-popped every 50 ms (about 20)")
                .isLessThanOrEqualTo(3);
        assertThat(publisher.published).hasSize(1);
    }

    /**
     * {@code count} members b1..bN whose earlier delivery waits for its retry (10 min away, b1's first), each also
     * scheduled again in K:0 and due long ago, ahead of anything due later.
     */
    private void blocked(BusinessSpec spec, int count, long now) {
        try (RedisConnection c = f.kit.redis()) {
            for (int i = 1; i <= count; i++) {
                byte[] member = bytes("b" + i);
                c.zSetCommands().zAdd(bytes(spec.keys().inflight(0)), now + RETRY_IN_MS + i * 1_000L, member);
                c.hashCommands().hSet(bytes(spec.keys().attempts(0)), member, bytes("3:1000:"));
                c.zSetCommands().zAdd(bytes(spec.keys().shard(0)), 1_000 + i, member);
            }
        }
    }
}
