package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.ops.DeadSetTrimmer.Trimmed;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;

class DeadSetTrimmerTest {

    private static final int SHARDS = 4;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void trimsTheOldestDeadLettersPastTheCapAcrossShardsAndKeepsPayloadsStillScheduled() {
        String business = kit.business("trimsize");
        ConfigurableApplicationContext context = start(business, "dead-max-size", 5);
        BusinessSpec spec =
                context.getBean(RelayEngine.class).relays().get(business).spec();
        long now = kit.redisNowMs();
        // 12 dead letters over 4 shards, died 12..1 minutes ago: d-0 is the oldest
        for (int i = 0; i < 12; i++) {
            dead(spec, i % SHARDS, "d-" + i, now - (12 - i) * 60_000L);
        }
        // d-1 died but was scheduled again meanwhile: its payload must survive the trim
        schedule(spec, 1, "d-1", now + 3_600_000L);

        Trimmed trimmed = context.getBean(DeadSetTrimmer.class).trim(spec, SHARDS);

        assertThat(trimmed).isEqualTo(new Trimmed(0, 7));
        assertThat(deadMembers(spec)).containsExactlyInAnyOrder("d-7", "d-8", "d-9", "d-10", "d-11");
        try (RedisConnection c = kit.redis()) {
            for (int i = 0; i < 12; i++) {
                byte[] id = bytes("d-" + i);
                boolean kept = i >= 7;
                assertThat(c.hashCommands().hExists(bytes(spec.keys().deadReasons(i % SHARDS)), id))
                        .isEqualTo(kept);
                assertThat(c.hashCommands().hExists(bytes(spec.keys().payloads(i % SHARDS)), id))
                        .as("payload of d-%d", i)
                        .isEqualTo(kept || i == 1);
            }
        }
        assertThat(trimmedCount(context, business, RelayMeterNames.BOUND_MAX_SIZE))
                .isEqualTo(7.0);
        assertThat(trimmedCount(context, business, RelayMeterNames.BOUND_MAX_AGE))
                .isZero();
    }

    /**
     * Finding 2 of the engine review (2026-11-24): a batch dies in one requeue.lua call, so its dead letters share
     * one time of death. A cap that is exceeded by a few letters removes exactly those few, oldest first (ties in
     * shard, then id order), never every letter that died at the cutoff's millisecond.
     */
    @Test
    void tiesOnTimeOfDeathNeverRemoveMoreThanTheExcess() {
        String business = kit.business("trimties");
        ConfigurableApplicationContext context = start(business, "dead-max-size", 10);
        BusinessSpec spec =
                context.getBean(RelayEngine.class).relays().get(business).spec();
        long diedAt = kit.redisNowMs() - 60_000;
        for (int i = 0; i < 12; i++) {
            dead(spec, i % SHARDS, "t-" + (char) ('a' + i), diedAt); // one batch, one millisecond
        }
        DeadSetTrimmer trimmer = context.getBean(DeadSetTrimmer.class);

        assertThat(trimmer.trim(spec, SHARDS)).as("12 dead letters, cap 10").isEqualTo(new Trimmed(0, 2));
        assertThat(deadMembers(spec))
                .as("shard 0's t-a and t-e went (the first two by time, shard, id)")
                .hasSize(10)
                .doesNotContain("t-a", "t-e");

        dead(spec, 2, "later", diedAt + 10);
        assertThat(trimmer.trim(spec, SHARDS))
                .as("one more dead letter at the cap removes one")
                .isEqualTo(new Trimmed(0, 1));
        assertThat(deadMembers(spec)).hasSize(10).contains("later").doesNotContain("t-i");
    }

    @Test
    void trimsDeadLettersOlderThanTheMaxAge() {
        String business = kit.business("trimage");
        ConfigurableApplicationContext context = start(business, "dead-max-age", "1h");
        BusinessSpec spec =
                context.getBean(RelayEngine.class).relays().get(business).spec();
        long now = kit.redisNowMs();
        dead(spec, 0, "ancient", now - Duration.ofDays(3).toMillis());
        dead(spec, 3, "old", now - Duration.ofMinutes(61).toMillis());
        dead(spec, 2, "recent", now - Duration.ofMinutes(59).toMillis());

        Trimmed trimmed = context.getBean(DeadSetTrimmer.class).trim(spec, SHARDS);

        assertThat(trimmed).isEqualTo(new Trimmed(2, 0));
        assertThat(deadMembers(spec)).containsExactly("recent");
        assertThat(trimmedCount(context, business, RelayMeterNames.BOUND_MAX_AGE))
                .isEqualTo(2.0);
    }

    @Test
    void twoReplicasTrimmingAtOnceRemoveOnlyTheExcess() throws Exception {
        String business = kit.business("trimrace");
        ConfigurableApplicationContext context = start(business, "dead-max-size", 100);
        BusinessSpec spec =
                context.getBean(RelayEngine.class).relays().get(business).spec();
        long now = kit.redisNowMs();
        for (int i = 0; i < 1_000; i++) {
            dead(spec, i % SHARDS, "r-" + i, now - 1_000_000L + i);
        }
        DeadSetTrimmer trimmer = context.getBean(DeadSetTrimmer.class);
        CyclicBarrier together = new CyclicBarrier(2);
        List<CompletableFuture<Trimmed>> replicas = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            replicas.add(CompletableFuture.supplyAsync(() -> {
                await(together);
                return trimmer.trim(spec, SHARDS);
            }));
        }
        long removed = 0;
        for (CompletableFuture<Trimmed> replica : replicas) {
            removed += replica.get().overSize();
        }

        assertThat(removed).isEqualTo(900);
        List<String> kept = deadMembers(spec);
        assertThat(kept).hasSize(100);
        assertThat(kept).allMatch(m -> Integer.parseInt(m.substring(2)) >= 900);
    }

    private ConfigurableApplicationContext start(String business, String property, Object value) {
        Map<String, Object> properties = RelayTestKit.business(
                kit.baseProperties(),
                business,
                kit.exchange("trim"),
                "rk",
                "shards",
                SHARDS,
                "paused",
                true,
                property,
                value);
        // the test triggers trims itself
        properties.put("relay.ops.dead-trim-interval", "1h");
        return kit.startRelay(properties);
    }

    /** Writes a dead letter as requeue.lua leaves it: in the dead set with a reason, its payload kept. */
    private void dead(BusinessSpec spec, int shard, String id, long diedAtMs) {
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(spec.keys().dead(shard)), diedAtMs, bytes(id));
            c.hashCommands().hSet(bytes(spec.keys().deadReasons(shard)), bytes(id), bytes("unroutable (attempts: 1)"));
            c.hashCommands().hSet(bytes(spec.keys().payloads(shard)), bytes(id), bytes("payload of " + id));
        }
    }

    private void schedule(BusinessSpec spec, int shard, String id, long dueMs) {
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(spec.keys().shard(shard)), dueMs, bytes(id));
        }
    }

    private List<String> deadMembers(BusinessSpec spec) {
        List<String> members = new ArrayList<>();
        try (RedisConnection c = kit.redis()) {
            for (int shard = 0; shard < SHARDS; shard++) {
                c.zSetCommands()
                        .zRange(bytes(spec.keys().dead(shard)), 0, -1)
                        .forEach(m -> members.add(new String(m, StandardCharsets.UTF_8)));
            }
        }
        return members;
    }

    private static double trimmedCount(ConfigurableApplicationContext context, String business, String bound) {
        return context.getBean(MeterRegistry.class)
                .get(RelayMeterNames.DEAD_TRIMMED)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_BOUND, bound)
                .counter()
                .count();
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] bytes(String s) {
        return DelayQueueKeys.bytes(s);
    }
}
