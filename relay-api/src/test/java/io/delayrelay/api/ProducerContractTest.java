package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

import io.delayrelay.api.internal.ByteRedisTemplates;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.ScanOptions;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The producer scripts of contract/ and the producer's shard handling, against a real Redis (REDIS_HOST/REDIS_PORT,
 * default 127.0.0.1:6379): after a shard-count change an id keeps exactly one live copy (issue 11, defect 5), and
 * the producer never deletes what an in-flight delivery or a dead letter still needs (issue 11, defect 4).
 */
class ProducerContractTest {

    private static final long FAR = 1_900_000_000_000L;

    private final String business =
            "contract-test-" + UUID.randomUUID().toString().substring(0, 8);
    private final DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
    private LettuceConnectionFactory factory;
    private RedisDelayedMessageProducer producer;

    @BeforeEach
    void connect() {
        factory = LocalRedis.connect();
        // no meta cache: a shard-count change written below is seen by the next call
        producer = new RedisDelayedMessageProducer(factory, 16, Duration.ZERO, DelayQueueKeys::forBusiness);
    }

    @AfterEach
    void cleanUp() {
        try (RedisConnection c = factory.getConnection()) {
            for (String key : keysOfBusiness()) {
                c.keyCommands().del(b(key));
            }
        }
        factory.destroy();
    }

    @Test
    void scheduleByIdAfterAReshardReplacesTheCopyInTheOldShardInsteadOfAddingOne() {
        producer.scheduleById(business, "order-1001", "v1", Instant.ofEpochMilli(FAR));
        reshard(16, 7);
        producer.scheduleById(business, "order-1001", "v2", Instant.ofEpochMilli(FAR + 1));

        assertThat(liveCopies("order-1001"))
                .as("one live entry, in the shard of the new count")
                .containsExactly(Map.entry(ShardSelector.shardOf("order-1001", 7), FAR + 1));
        assertThat(payloads("order-1001")).containsExactly(Map.entry(ShardSelector.shardOf("order-1001", 7), "v2"));
    }

    @Test
    void cancelByIdAfterAReshardCancelsEveryCopyWhateverShardCountItWasScheduledUnder() {
        producer.scheduleById(business, "order-1001", "v1", Instant.ofEpochMilli(FAR));
        reshard(16, 7);
        // a second copy under the new count, as written by a producer that switched earlier (or by an old bug)
        scheduleRaw(ShardSelector.shardOf("order-1001", 7), "order-1001", "v2", FAR + 5);

        assertThat(producer.cancelById(business, "order-1001")).isTrue();

        assertThat(liveCopies("order-1001"))
                .as("cancel really cancels: no copy left to fire")
                .isEmpty();
        assertThat(payloads("order-1001")).isEmpty();
        assertThat(producer.cancelById(business, "order-1001")).isFalse();
    }

    @Test
    void rescheduleByIdAfterAReshardMovesOneCopyAndRemovesTheOthers() {
        producer.scheduleById(business, "order-1001", "v1", Instant.ofEpochMilli(FAR));
        reshard(16, 7);
        scheduleRaw(ShardSelector.shardOf("order-1001", 7), "order-1001", "v2", FAR + 5);

        assertThat(producer.rescheduleById(business, "order-1001", Instant.ofEpochMilli(FAR + 9)))
                .isTrue();

        assertThat(liveCopies("order-1001"))
                .as("exactly one live copy, at the new time")
                .hasSize(1)
                .containsValue(FAR + 9);
    }

    @Test
    void scheduleByMessageAfterAReshardKeepsOneEntryOfTheSameBytes() {
        producer.schedule(business, "remind user 42", Instant.ofEpochMilli(FAR));
        reshard(16, 7);
        producer.schedule(business, "remind user 42", Instant.ofEpochMilli(FAR + 1));

        assertThat(liveCopies("remind user 42"))
                .containsExactly(Map.entry(ShardSelector.shardOf("remind user 42", 7), FAR + 1));
    }

    @Test
    void reschedulingByIdClearsTheAttemptsMarkSoTheNewScheduleGetsItsOwnMessageId() {
        int shard = ShardSelector.shardOf("order-7", 16);
        producer.scheduleById(business, "order-7", "v1", Instant.ofEpochMilli(FAR));
        // the relay failed a delivery and put it back for a retry: "<failed>:<original due>"
        hset(keys.attempts(shard), "order-7", "2:" + FAR);

        producer.scheduleById(business, "order-7", "v2", Instant.ofEpochMilli(FAR + 60_000));
        assertThat(hget(keys.attempts(shard), "order-7")).as("schedule by id").isNull();

        hset(keys.attempts(shard), "order-7", "1:" + (FAR + 60_000));
        producer.rescheduleById(business, "order-7", Instant.ofEpochMilli(FAR + 120_000));
        assertThat(hget(keys.attempts(shard), "order-7")).as("reschedule by id").isNull();
    }

    @Test
    void reschedulingAnIdInFlightLeavesTheInFlightDeliveryItsAttemptsMarkAndPayloadUntilItSettles() {
        int shard = ShardSelector.shardOf("order-8", 16);
        producer.scheduleById(business, "order-8", "v1", Instant.ofEpochMilli(FAR));
        popIntoFlight(shard, "order-8", "1:" + FAR);

        producer.scheduleById(business, "order-8", "v2", Instant.ofEpochMilli(FAR + 1000));
        assertThat(hget(keys.attempts(shard), "order-8"))
                .as("the in-flight delivery's mark")
                .isEqualTo("1:" + FAR);
        assertThat(score(keys.inflight(shard), "order-8"))
                .as("the in-flight lease is not disturbed")
                .isNotNull();
        assertThat(score(keys.shard(shard), "order-8")).as("the new schedule").isEqualTo((double) (FAR + 1000));

        assertThat(producer.cancelById(business, "order-8"))
                .as("cancels the new schedule")
                .isTrue();
        assertThat(hget(keys.payloads(shard), "order-8"))
                .as("a retry of the in-flight delivery still has its body")
                .isEqualTo("v2");
        assertThat(hget(keys.attempts(shard), "order-8")).isEqualTo("1:" + FAR);
        assertThat(producer.cancelById(business, "order-8"))
                .as("in flight: not cancellable")
                .isFalse();
    }

    @Test
    void aDeadLettersPayloadSurvivesACancelOfTheSameIdScheduledAgain() {
        int shard = ShardSelector.shardOf("order-9", 16);
        producer.scheduleById(business, "order-9", "the body", Instant.ofEpochMilli(FAR));
        killIntoDeadSet(shard, "order-9");

        producer.scheduleById(business, "order-9", "the body", Instant.ofEpochMilli(FAR + 1000));
        assertThat(producer.cancelById(business, "order-9")).isTrue();

        assertThat(hget(keys.payloads(shard), "order-9"))
                .as("a replay of the dead letter publishes the real body")
                .isEqualTo("the body");
        assertThat(score(keys.dead(shard), "order-9")).isNotNull();
    }

    @Test
    void cancelDropsThePayloadWhenNothingElseHoldsTheId() {
        int shard = ShardSelector.shardOf("order-10", 16);
        producer.scheduleById(business, "order-10", "body", Instant.ofEpochMilli(FAR));
        hset(keys.attempts(shard), "order-10", "1:" + FAR);
        assertThat(producer.cancelById(business, "order-10")).isTrue();
        assertThat(hget(keys.payloads(shard), "order-10")).isNull();
        assertThat(hget(keys.attempts(shard), "order-10")).isNull();
    }

    @Test
    void theScriptsRejectBadArgumentsNamingTheValue() {
        RedisTemplate<byte[], byte[]> redis = ByteRedisTemplates.create(factory);
        List<byte[]> scriptKeys = ProducerScripts.keys(keys, 0);
        assertThatThrownBy(() -> redis.execute(
                        ProducerScripts.SCHEDULE, scriptKeys, b("m"), b("at"), b("soon"), b(keys.wake()), b("0")))
                .hasStackTraceContaining("ARGV[3] must be integer milliseconds, was soon");
        assertThatThrownBy(() -> redis.execute(
                        ProducerScripts.RESCHEDULE, scriptKeys, b("m"), b("in"), b("5"), b(keys.wake()), b("0")))
                .hasStackTraceContaining("ARGV[2] must be 'at' or 'after', was in");
        assertThat(liveCopies("m")).isEmpty();
    }

    @Test
    void aKeyOfTheWrongTypeFailsTheScheduleBeforeAnythingIsWritten() {
        int shard = ShardSelector.shardOf("order-11", 16);
        try (RedisConnection c = factory.getConnection()) {
            c.stringCommands().set(b(keys.shard(shard)), b("not a zset"));
        }
        assertThatThrownBy(() -> producer.scheduleById(business, "order-11", "body", Instant.ofEpochMilli(FAR)))
                .hasStackTraceContaining("WRONGTYPE");
        assertThat(hget(keys.payloads(shard), "order-11"))
                .as("no orphan payload")
                .isNull();
    }

    @Test
    void scheduledByMessageAShardOrAttemptsHashOfTheWrongTypeFailsTheScheduleAndSchedulesNothing() {
        String message = "remind user 77";
        int shard = ShardSelector.shardOf(message, 16);
        try (RedisConnection c = factory.getConnection()) {
            c.stringCommands().set(b(keys.shard(shard)), b("not a zset"));
        }
        assertThatThrownBy(() -> producer.schedule(business, message, Instant.ofEpochMilli(FAR)))
                .hasStackTraceContaining("WRONGTYPE");
        try (RedisConnection c = factory.getConnection()) {
            assertThat(new String(c.stringCommands().get(b(keys.shard(shard))), StandardCharsets.UTF_8))
                    .as("the foreign value is left as it was")
                    .isEqualTo("not a zset");
            c.keyCommands().del(b(keys.shard(shard)));
            c.stringCommands().set(b(keys.attempts(shard)), b("not a hash"));
        }
        // the attempts hash is the first write of a schedule by message: it fails before the ZADD
        assertThatThrownBy(() -> producer.schedule(business, message, Instant.ofEpochMilli(FAR)))
                .hasStackTraceContaining("WRONGTYPE");
        assertThat(score(keys.shard(shard), message)).as("nothing scheduled").isNull();
        assertThat(liveCopies(message)).isEmpty();
    }

    /** What the relay does on a shard-count change (reshard.lua), written directly. */
    private void reshard(int from, int to) {
        hset(keys.meta(), MetaFields.SHARDS, Integer.toString(to));
        hset(keys.meta(), MetaFields.DRAINING, from > to ? Integer.toString(from) : "");
        hset(keys.meta(), MetaFields.HISTORY, Integer.toString(from));
    }

    private void scheduleRaw(int shard, String id, String payload, long due) {
        try (RedisConnection c = factory.getConnection()) {
            c.hashCommands().hSet(b(keys.payloads(shard)), b(id), b(payload));
            c.zSetCommands().zAdd(b(keys.shard(shard)), due, b(id));
        }
    }

    /** What pop.lua does to a member, minus the reply. */
    private void popIntoFlight(int shard, String member, String mark) {
        try (RedisConnection c = factory.getConnection()) {
            c.zSetCommands().zRem(b(keys.shard(shard)), b(member));
            c.zSetCommands().zAdd(b(keys.inflight(shard)), FAR + 30_000, b(member));
            c.hashCommands().hSet(b(keys.attempts(shard)), b(member), b(mark));
        }
    }

    /** A delivery that failed for good: out of the shard, into the dead set, payload kept. */
    private void killIntoDeadSet(int shard, String member) {
        try (RedisConnection c = factory.getConnection()) {
            c.zSetCommands().zRem(b(keys.shard(shard)), b(member));
            c.zSetCommands().zAdd(b(keys.dead(shard)), FAR, b(member));
            c.hashCommands().hSet(b(keys.deadReasons(shard)), b(member), b("unroutable"));
        }
    }

    /** Shard -> due of every scheduled copy of the member, over every shard index used by any count above. */
    private Map<Integer, Long> liveCopies(String member) {
        Map<Integer, Long> copies = new TreeMap<>();
        try (RedisConnection c = factory.getConnection()) {
            for (int shard = 0; shard < 16; shard++) {
                Double score = c.zSetCommands().zScore(b(keys.shard(shard)), b(member));
                if (score != null) {
                    copies.put(shard, score.longValue());
                }
            }
        }
        return copies;
    }

    private Map<Integer, String> payloads(String id) {
        Map<Integer, String> found = new TreeMap<>();
        for (int shard = 0; shard < 16; shard++) {
            String payload = hget(keys.payloads(shard), id);
            if (payload != null) {
                found.put(shard, payload);
            }
        }
        return found;
    }

    private List<String> keysOfBusiness() {
        List<String> found = new ArrayList<>();
        try (RedisConnection c = factory.getConnection()) {
            for (String pattern : List.of(keys.sourceKey() + ":*", "{" + keys.sourceKey() + ":*")) {
                try (Cursor<byte[]> cursor = c.keyCommands()
                        .scan(ScanOptions.scanOptions()
                                .match(pattern)
                                .count(1000)
                                .build())) {
                    cursor.forEachRemaining(k -> found.add(new String(k, StandardCharsets.UTF_8)));
                }
            }
        }
        return found;
    }

    private Double score(String key, String member) {
        try (RedisConnection c = factory.getConnection()) {
            return c.zSetCommands().zScore(b(key), b(member));
        }
    }

    private String hget(String key, String field) {
        try (RedisConnection c = factory.getConnection()) {
            byte[] value = c.hashCommands().hGet(b(key), b(field));
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }

    private void hset(String key, String field, String value) {
        try (RedisConnection c = factory.getConnection()) {
            c.hashCommands().hSet(b(key), b(field), b(value));
        }
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
