package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A raw {@code ZADD} may write a fractional score (the contract scripts write whole ms): it is due only once that
 * score is reached, so the relay reads it as the next whole millisecond, both as an entry popped ahead (the due time
 * {@link DueGate} waits for) and as a shard's next due time (engine review 2026-11-28, finding 6).
 */
class FractionalScoreTest {

    private final EngineFixture f = new EngineFixture();

    @AfterEach
    void cleanUp() {
        f.close();
    }

    @Test
    void anEntryTakenAheadWithAFractionalScoreIsDueAtTheNextWholeMillisecond() {
        BusinessSpec spec = f.spec("frac").build();
        long due = f.kit.redisNowMs() + 300;
        zadd(spec, "frac", due + 0.5);

        PopResult popped =
                f.store.pop(spec, Round.of(0, true, 10, 1_000), List.of()).single();

        assertThat(EngineFixture.members(popped)).containsExactly("frac");
        assertThat(popped.entries().get(0).dueAtMs())
                .as("the gate opens at ceil(score), never before it")
                .isEqualTo(due + 1);
    }

    @Test
    void aFractionalNextDueIsReportedAsTheNextWholeMillisecond() {
        BusinessSpec spec = f.spec("fracnext").build();
        long due = f.kit.redisNowMs() + 60_000;
        zadd(spec, "later", due + 0.5);

        PopResult popped = f.store
                .pop(spec, Round.of(0, true, Integer.MAX_VALUE, 0), List.of())
                .single();

        assertThat(popped.entries()).isEmpty();
        assertThat(popped.nextDueMs())
                .as("not the truncated score: no re-pop before it")
                .isEqualTo(due + 1);
    }

    private void zadd(BusinessSpec spec, String member, double score) {
        try (RedisConnection c = f.kit.redis()) {
            c.zSetCommands()
                    .zAdd(
                            spec.keys().shard(0).getBytes(StandardCharsets.UTF_8),
                            score,
                            member.getBytes(StandardCharsets.UTF_8));
        }
    }
}
