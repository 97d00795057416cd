package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import io.delayrelay.app.engine.EngineFixture.ConfirmingPublisher;
import io.delayrelay.app.engine.EngineFixture.CountingEvents;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.app.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Expired leases are taken back on demand, by the worker whose pop saw them, with no periodic reaper round: a
 * lease of a holder that died (another store, so another instance's lease tokens, that never acks) is counted,
 * retried with its original message id, dead-lettered at max-attempts, and its shard is not popped again and again
 * while it waits.
 */
class ExpiredLeaseTakeBackTest {

    private static final String MEMBER = "order-7";

    private final EngineFixture f = new EngineFixture();
    /** The instance that popped and then died (kill -9): it never acks, retries or releases. */
    private final ShardStore killedHolder = new ShardStore(f.kit.redisFactory());

    @AfterEach
    void cleanUp() {
        f.close();
    }

    @Test
    void anExpiredLeaseOfAKilledHolderIsTakenBackByAnotherInstancesWorkerAndRetriedWithItsMessageId() {
        BusinessSpec spec = f.spec("expired")
                .retryDelay(Duration.ofMillis(10), Duration.ofMinutes(1))
                .build();
        PopResult lost = leaseAndDie(spec);
        long originalDue = lost.entries().get(0).dueAtMs();
        RecordingEvents events = new RecordingEvents();
        ConfirmingPublisher publisher = new ConfirmingPublisher();

        f.start(spec, publisher, events);

        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published.size() == 1);
        DueMessage retried = publisher.published.get(0);
        assertThat(retried.bodyAsString()).isEqualTo(MEMBER);
        assertThat(retried.attempt())
                .as("the expired lease counts as a failed attempt")
                .isEqualTo(2);
        assertThat(retried.dueAtMs()).as("original due time kept").isEqualTo(originalDue);
        assertThat(retried.messageId())
                .as("same message id as the lost delivery")
                .isEqualTo(DueBatch.messageId(spec.name(), bytes(MEMBER), originalDue));
        assertThat(events.expired.get()).as("counted once").isEqualTo(1);
        await().atMost(Duration.ofSeconds(5)).until(() -> f.inflight(spec) == 0);
        assertThat(killedHolder.ack(spec, List.of(new ShardStore.Ack(0, lost.token(), List.of(bytes(MEMBER)), true))))
                .as("the dead holder's late ack owns nothing")
                .isZero();
        assertThat(events.dead).isEmpty();
        assertThat(events.errors.get()).isZero();
    }

    @Test
    void anExpiredLeaseThatReachesMaxAttemptsIsDeadLettered() {
        BusinessSpec spec = f.spec("expired-dead").maxAttempts(1).build();
        leaseAndDie(spec);
        RecordingEvents events = new RecordingEvents();
        ConfirmingPublisher publisher = new ConfirmingPublisher();

        f.start(spec, publisher, events);

        await().atMost(Duration.ofSeconds(10)).until(() -> events.dead.size() == 1);
        assertThat(events.dead).containsExactly(DeadReason.LEASE_EXPIRED);
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.zSetCommands().zScore(bytes(spec.keys().dead(0)), bytes(MEMBER)))
                    .as("in the dead set")
                    .isNotNull();
            assertThat(new String(
                            c.hashCommands().hGet(bytes(spec.keys().deadReasons(0)), bytes(MEMBER)),
                            java.nio.charset.StandardCharsets.UTF_8))
                    .as("the reason keeps the original due time")
                    .matches("lease expired \\(due: [0-9]{13}\\) \\(attempts: 1\\)");
        }
        assertThat(f.inflight(spec)).isZero();
        assertThat(publisher.published).isEmpty();
        assertThat(events.expired.get()).as("dead, not put back").isZero();
    }

    /**
     * The known defect: an expired lease waiting for the periodic reaper made its shard re-pop every 50 ms for up
     * to one reaper interval. Now the pop that sees it takes it back, and the shard sleeps until the retry is due.
     */
    @Test
    void aShardHoldingOnlyAnExpiredLeaseIsNotPoppedAgainAndAgain() {
        BusinessSpec spec = f.spec("expired-spin")
                .maxIdle(Duration.ofSeconds(10))
                .retryDelay(Duration.ofMinutes(1), Duration.ofMinutes(1))
                .build();
        leaseAndDie(spec);
        RecordingEvents events = new RecordingEvents();

        f.start(spec, new ConfirmingPublisher(), events);

        await().atMost(Duration.ofSeconds(10)).until(() -> events.expired.get() == 1);
        int popsWhenTakenBack = f.store.pops.get();
        // one more pop may come 50 ms later (the pop that saw the lease could not know the retry time); then the
        // shard's next due time is the retry, a minute away, and the worker sleeps up to max-idle (10 s)
        await().during(Duration.ofMillis(1_000))
                .atMost(Duration.ofSeconds(3))
                .until(() -> f.store.pops.get() <= popsWhenTakenBack + 1);
        try (RedisConnection c = f.kit.redis()) {
            Double retryAt = c.zSetCommands().zScore(bytes(spec.keys().inflight(0)), bytes(MEMBER));
            assertThat(retryAt).as("waits for its retry").isGreaterThan((double) f.kit.redisNowMs() + 30_000);
        }
        assertThat(events.errors.get()).isZero();
    }

    /** Pops {@link #MEMBER} under a 50 ms lease with another store (another instance), then never settles it. */
    private PopResult leaseAndDie(BusinessSpec spec) {
        BusinessSpec shortLease = spec.toBuilder().lease(Duration.ofMillis(50)).build();
        f.zadd(shortLease, 0, MEMBER, f.kit.redisNowMs() - 1_000);
        PopResult lost = killedHolder.pop(shortLease, Round.of(0), List.of()).single();
        assertThat(lost.entries()).hasSize(1);
        return lost;
    }

    private static final class RecordingEvents extends CountingEvents {
        final AtomicInteger expired = new AtomicInteger();
        final List<DeadReason> dead = new CopyOnWriteArrayList<>();

        @Override
        public void leaseExpired(BusinessSpec spec, int shard, int count) {
            expired.addAndGet(count);
        }

        @Override
        public void deadLettered(BusinessSpec spec, int shard, DeadReason reason, int count) {
            for (int i = 0; i < count; i++) {
                dead.add(reason);
            }
        }
    }
}
