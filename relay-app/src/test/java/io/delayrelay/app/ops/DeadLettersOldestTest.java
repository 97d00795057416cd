package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * "Replay (purge) the oldest N" acts on exactly the N letters listed, in their own shards. After a reshard one member
 * can be dead in two shards (died under the old count, scheduled again, died under the new one); the model test
 * (seed -1913194275510418034) found the oldest-1 replay replaying both, because the listed members were replayed by
 * name in every shard.
 */
class DeadLettersOldestTest {

    private static final int SHARDS = 4;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void replayAndPurgeOfTheOldestNActOnlyOnTheListedLettersOfAMemberDeadInTwoShards() {
        String business = kit.business("oldestn");
        ConfigurableApplicationContext context = kit.startRelay(RelayTestKit.business(
                kit.baseProperties(), business, kit.exchange("oldestn"), "rk", "shards", SHARDS, "paused", true));
        BusinessSpec spec =
                context.getBean(RelayEngine.class).relays().get(business).spec();
        DeadLetters deadLetters = context.getBean(DeadLetters.class);
        long now = kit.redisNowMs();
        dead(spec, 0, "m", now - 120_000); // the oldest
        dead(spec, 2, "m", now - 60_000); // the same member, dead again in another shard
        dead(spec, 1, "other", now - 30_000);

        assertThat(deadLetters.replayOldest(spec, SHARDS, 1)).isEqualTo(1);
        assertThat(dead(spec)).containsExactly("1:other", "2:m");
        try (RedisConnection c = kit.redis()) {
            assertThat(c.zSetCommands().zScore(bytes(spec.keys().inflight(0)), bytes("m")))
                    .as("shard 0's m waits for its replay")
                    .isNotNull();
            assertThat(c.zSetCommands().zScore(bytes(spec.keys().inflight(2)), bytes("m")))
                    .as("shard 2's m was not listed")
                    .isNull();
        }

        assertThat(deadLetters.purgeOldest(spec, SHARDS, 1)).isEqualTo(1);
        assertThat(dead(spec)).containsExactly("1:other");
        try (RedisConnection c = kit.redis()) {
            assertThat(c.hashCommands().hExists(bytes(spec.keys().payloads(0)), bytes("m")))
                    .as("shard 0's replayed m keeps its payload")
                    .isTrue();
        }
    }

    /** Writes a dead letter as requeue.lua leaves it: in the dead set with a reason, its payload kept. */
    private void dead(BusinessSpec spec, int shard, String id, long diedAtMs) {
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(spec.keys().dead(shard)), diedAtMs, bytes(id));
            c.hashCommands().hSet(bytes(spec.keys().deadReasons(shard)), bytes(id), bytes("unroutable (attempts: 1)"));
            c.hashCommands().hSet(bytes(spec.keys().payloads(shard)), bytes(id), bytes("payload of " + id));
        }
    }

    /** Every dead letter as "shard:member", shard by shard. */
    private List<String> dead(BusinessSpec spec) {
        List<String> letters = new ArrayList<>();
        try (RedisConnection c = kit.redis()) {
            for (int shard = 0; shard < SHARDS; shard++) {
                for (byte[] m : c.zSetCommands().zRange(bytes(spec.keys().dead(shard)), 0, -1)) {
                    letters.add(shard + ":" + new String(m, StandardCharsets.UTF_8));
                }
            }
        }
        return letters;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
