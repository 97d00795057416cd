package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.app.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The late policy in pop.lua against the real Redis: an entry popped past max-lateness (from its original due time,
 * retries included) or past its own expiry (contract v2 options) is never handed out; it goes to the dead set with
 * reason expired, or is dropped with its payload (unless a dead letter of the id still needs it). A replayed expired
 * letter is published.
 */
class LatePolicyPopTest {

    private static final RedisScript<Long> DEAD_LETTERS =
            LuaScripts.load("io/delayrelay/app/lua/dead-letters.lua", Long.class);

    private final EngineFixture f = new EngineFixture();

    @AfterEach
    void cleanUp() {
        f.close();
    }

    @Test
    void entriesPastMaxLatenessGoToTheDeadSetWithReasonExpiredAndFreshOnesAreHandedOut() {
        BusinessSpec spec = f.spec("late").build().toBuilder()
                .latePolicy(Duration.ofSeconds(2), false)
                .build();
        long now = f.kit.redisNowMs();
        f.zadd(spec, 0, "stale-1", now - 10_000);
        f.zadd(spec, 0, "stale-2", now - 10_001);
        f.zadd(spec, 0, "fresh", now - 500);

        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();

        assertThat(popped.entries()).extracting(e -> text(e.member())).containsExactly("fresh");
        assertThat(popped.late()).extracting(l -> text(l.member())).containsExactly("stale-2", "stale-1");
        assertThat(popped.late()).extracting(PopResult.Late::dueAtMs).containsExactly(now - 10_001, now - 10_000);
        assertThat(popped.late()).allSatisfy(l -> assertThat(l.expiresAtMs()).isEqualTo(-1));
        assertThat(popped.nextDueMs())
                .as("late entries taken: come back at once")
                .isEqualTo(popped.redisNowMs());
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.zSetCommands().zCard(bytes(spec.keys().shard(0)))).isZero();
            assertThat(c.zSetCommands().zScore(bytes(spec.keys().dead(0)), bytes("stale-1")))
                    .isEqualTo((double) popped.redisNowMs());
            String reason = text(c.hashCommands().hGet(bytes(spec.keys().deadReasons(0)), bytes("stale-1")));
            long lateMs = popped.redisNowMs() - (now - 10_000);
            assertThat(reason)
                    .isEqualTo("expired: " + lateMs + " ms late, max-lateness 2000 ms (due: " + (now - 10_000)
                            + ") (attempts: 0)");
            assertThat(c.hashCommands().hExists(bytes(spec.keys().attempts(0)), bytes("stale-1")))
                    .isFalse();
        }
    }

    @Test
    void withoutAPolicyNothingIsLateHoweverOverdue() {
        BusinessSpec spec = f.spec("nolimit").build();
        f.zadd(spec, 0, "ancient", f.kit.redisNowMs() - 86_400_000L);
        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();
        assertThat(popped.entries()).extracting(e -> text(e.member())).containsExactly("ancient");
        assertThat(popped.late()).isEmpty();
    }

    @Test
    void aRetryIsMeasuredFromTheOriginalDueTime() {
        BusinessSpec spec =
                f.spec("retry").retryDelay(Duration.ofMillis(700), Duration.ofMinutes(1)).build().toBuilder()
                        .latePolicy(Duration.ofMillis(500), false)
                        .build();
        long due = f.kit.redisNowMs() - 100;
        f.zadd(spec, 0, "flaky", due);
        PopResult first = f.store.pop(spec, Round.of(0), List.of()).single();
        assertThat(first.entries()).hasSize(1);
        f.store.requeue(spec, 0, first.token(), List.of(bytes("flaky")), 5, "nack");

        PopResult retry = await().atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(50))
                .until(
                        () -> f.store.pop(spec, Round.of(0), List.of()).single(),
                        p -> !p.late().isEmpty() || !p.entries().isEmpty());

        assertThat(retry.entries()).isEmpty();
        assertThat(retry.late()).extracting(l -> text(l.member())).containsExactly("flaky");
        assertThat(retry.late().get(0).dueAtMs()).as("the original due time").isEqualTo(due);
        try (RedisConnection c = f.kit.redis()) {
            String reason = text(c.hashCommands().hGet(bytes(spec.keys().deadReasons(0)), bytes("flaky")));
            assertThat(reason).startsWith("expired: ").endsWith("(due: " + due + ") (attempts: 1)");
            assertThat(c.zSetCommands().zCard(bytes(spec.keys().inflight(0)))).isZero();
            assertThat(c.hashCommands().hLen(bytes(spec.keys().attempts(0)))).isZero();
        }
    }

    @Test
    void dropRemovesTheEntryAndItsPayloadButKeepsAPayloadADeadLetterOfTheIdNeeds() {
        BusinessSpec spec = f.spec("drop").build().toBuilder()
                .latePolicy(Duration.ofSeconds(1), true)
                .build();
        long now = f.kit.redisNowMs();
        f.zadd(spec, 0, "id-gone", now - 5_000);
        f.zadd(spec, 0, "id-kept", now - 5_000);
        try (RedisConnection c = f.kit.redis()) {
            c.hashCommands().hSet(bytes(spec.keys().payloads(0)), bytes("id-gone"), bytes("message 1"));
            c.hashCommands().hSet(bytes(spec.keys().payloads(0)), bytes("id-kept"), bytes("message 2"));
            c.zSetCommands().zAdd(bytes(spec.keys().dead(0)), now - 60_000, bytes("id-kept"));
            c.hashCommands().hSet(bytes(spec.keys().deadReasons(0)), bytes("id-kept"), bytes("unroutable"));
        }

        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();

        assertThat(popped.entries()).isEmpty();
        assertThat(popped.late()).extracting(l -> text(l.member())).containsExactly("id-gone", "id-kept");
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.zSetCommands().zCard(bytes(spec.keys().shard(0)))).isZero();
            assertThat(c.hashCommands().hKeys(bytes(spec.keys().payloads(0))))
                    .extracting(LatePolicyPopTest::text)
                    .containsExactly("id-kept");
            assertThat(c.zSetCommands().zScore(bytes(spec.keys().dead(0)), bytes("id-kept")))
                    .as("the earlier dead letter is untouched")
                    .isEqualTo((double) (now - 60_000));
            assertThat(text(c.hashCommands().hGet(bytes(spec.keys().deadReasons(0)), bytes("id-kept"))))
                    .isEqualTo("unroutable");
        }
    }

    @Test
    void aMessagePastItsOwnExpiryIsDeadAndAReplayPublishesIt() {
        BusinessSpec spec = f.spec("expiry").build();
        long now = f.kit.redisNowMs();
        long due = now - 3_000;
        long expiry = now - 1_000;
        f.zadd(spec, 0, "code-1", due);
        f.zadd(spec, 0, "code-2", due);
        try (RedisConnection c = f.kit.redis()) {
            c.hashCommands().hSet(bytes(spec.keys().payloads(0)), bytes("code-1"), envelope(expiry, "one-time code"));
            c.hashCommands()
                    .hSet(bytes(spec.keys().payloads(0)), bytes("code-2"), envelope(now + 60_000, "still good"));
        }

        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();

        assertThat(popped.entries()).extracting(e -> text(e.member())).containsExactly("code-2");
        assertThat(popped.late()).extracting(l -> text(l.member())).containsExactly("code-1");
        assertThat(popped.late().get(0).expiresAtMs()).isEqualTo(expiry);
        try (RedisConnection c = f.kit.redis()) {
            assertThat(text(c.hashCommands().hGet(bytes(spec.keys().deadReasons(0)), bytes("code-1"))))
                    .isEqualTo("expired: past its expiry " + expiry + " (due: " + due + ") (attempts: 0)");
            Long replayed = c.scriptingCommands()
                    .eval(
                            bytes(DEAD_LETTERS.getScriptAsString()),
                            ReturnType.INTEGER,
                            6,
                            bytes(spec.keys().shard(0)),
                            bytes(spec.keys().payloads(0)),
                            bytes(spec.keys().inflight(0)),
                            bytes(spec.keys().dead(0)),
                            bytes(spec.keys().deadReasons(0)),
                            bytes(spec.keys().attempts(0)),
                            bytes("replay"),
                            bytes("members"),
                            bytes("code-1"));
            assertThat(replayed).isEqualTo(1);
        }
        PopResult replay = f.store.pop(spec, Round.of(0), List.of()).single();
        assertThat(replay.late())
                .as("a replay is a new delivery due after the expiry")
                .isEmpty();
        assertThat(replay.entries()).extracting(e -> text(e.member())).containsExactly("code-1");
        assertThat(replay.entries().get(0).payload()).isEqualTo(envelope(expiry, "one-time code"));
    }

    @Test
    void aReloadedPolicyAppliesFromTheNextPop() {
        BusinessSpec none = f.spec("reload").maxIdle(Duration.ofMillis(20)).build();
        EngineFixture.ConfirmingPublisher publisher = new EngineFixture.ConfirmingPublisher();
        java.util.List<Integer> deadExpired = new java.util.concurrent.CopyOnWriteArrayList<>();
        BusinessRelay relay = f.start(none, publisher, new RelayEvents() {
            @Override
            public void deadLettered(BusinessSpec spec, int shard, DeadReason reason, int count) {
                if (reason == DeadReason.EXPIRED) {
                    deadExpired.add(count);
                }
            }
        });
        f.zadd(none, 0, "late-but-delivered", f.kit.redisNowMs() - 10_000);
        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published.size() == 1);

        relay.update(none.toBuilder().latePolicy(Duration.ofSeconds(2), false).build(), 0);
        f.zadd(none, 0, "late-and-dead", f.kit.redisNowMs() - 10_000);

        await().atMost(Duration.ofSeconds(10))
                .until(() -> deadExpired.stream().mapToInt(i -> i).sum() == 1);
        assertThat(publisher.published).extracting(m -> text(m.member())).containsExactly("late-but-delivered");
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.zSetCommands().zScore(bytes(none.keys().dead(0)), bytes("late-and-dead")))
                    .isNotNull();
        }
    }

    /** A contract v2 payload with an expiry and no headers (what schedule.lua writes). */
    static byte[] envelope(long expiry, String message) {
        byte[] head = ("DR2:" + expiry + ":0:").getBytes(StandardCharsets.US_ASCII);
        byte[] body = message.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[1 + head.length + body.length];
        out[0] = (byte) 0xFF;
        System.arraycopy(head, 0, out, 1, head.length);
        System.arraycopy(body, 0, out, 1 + head.length, body.length);
        return out;
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
