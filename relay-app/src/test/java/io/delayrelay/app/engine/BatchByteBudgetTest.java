package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 11 defect 8: batches were sized by count only (500 entries of 1 MiB made a 500 MiB reply). A pop now
 * returns at most batch-bytes of members and payloads, one entry at least, leaving the rest due in the shard.
 */
class BatchByteBudgetTest {

    private static final int KIB = 1024;

    private final EngineFixture f = new EngineFixture();

    @AfterEach
    void cleanUp() {
        f.close();
    }

    @Test
    void aPopReturnsNoMoreBytesThanTheBatchBudgetAndLeavesTheRestDue() {
        BusinessSpec spec = f.spec("bytes").batchSize(500).batchBytes(250 * KIB).build();
        long due = f.kit.redisNowMs() - 1_000;
        for (int i = 0; i < 10; i++) {
            f.zadd(spec, 0, big(i, 100 * KIB), due + i);
        }

        PopResult first = f.store.pop(spec, Round.of(0), List.of()).single();

        assertThat(first.entries())
                .as("two 100 KiB members fit in 250 KiB, a third does not")
                .hasSize(2);
        assertThat(first.entries().stream().mapToInt(e -> e.member().length).sum())
                .isLessThanOrEqualTo(250 * KIB);
        assertThat(first.moreDue()).as("the shard is popped again at once").isTrue();
        assertThat(f.inflight(spec)).isEqualTo(2);
        int popped = 2;
        while (popped < 10) {
            PopResult next = f.store.pop(spec, Round.of(0), List.of()).single();
            assertThat(next.entries()).hasSizeBetween(1, 2);
            popped += next.entries().size();
        }
        assertThat(f.inflight(spec)).isEqualTo(10);
    }

    @Test
    void payloadsOfEntriesScheduledByIdCountTowardsTheBudget() {
        BusinessSpec spec =
                f.spec("payloads").batchSize(500).batchBytes(250 * KIB).build();
        long due = f.kit.redisNowMs() - 1_000;
        try (RedisConnection c = f.kit.redis()) {
            for (int i = 0; i < 5; i++) {
                String id = "order-" + i;
                c.hashCommands()
                        .hSet(
                                EngineFixture.bytes(spec.keys().payloads(0)),
                                EngineFixture.bytes(id),
                                big(i, 120 * KIB).getBytes(StandardCharsets.UTF_8));
                f.zadd(spec, 0, id, due + i);
            }
        }

        PopResult popped = f.store.pop(spec, Round.of(0), List.of()).single();

        assertThat(popped.entries()).hasSize(2);
        assertThat(popped.entries()).allSatisfy(e -> assertThat(e.payload()).hasSize(120 * KIB));
    }

    @Test
    void anEntryLargerThanTheBudgetIsStillPoppedAlone() {
        BusinessSpec spec = f.spec("huge").batchSize(500).batchBytes(64 * KIB).build();
        long due = f.kit.redisNowMs() - 1_000;
        f.zadd(spec, 0, big(1, 200 * KIB), due);
        f.zadd(spec, 0, big(2, 200 * KIB), due + 1);

        assertThat(f.store.pop(spec, Round.of(0), List.of()).single().entries()).hasSize(1);
        assertThat(f.store.pop(spec, Round.of(0), List.of()).single().entries()).hasSize(1);
        assertThat(f.inflight(spec)).isEqualTo(2);
    }

    /** A member of {@code size} bytes, distinct per {@code i}. */
    private static String big(int i, int size) {
        char[] text = new char[size];
        Arrays.fill(text, 'x');
        String prefix = "m" + i + "-";
        prefix.getChars(0, prefix.length(), text, 0);
        return new String(text);
    }
}
