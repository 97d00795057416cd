package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.listener.ChannelTopic;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** Against a real Redis (REDIS_HOST/REDIS_PORT, default 127.0.0.1:6379); fails, never skips, when it is down. */
class RedisDelayedMessageProducerTest {

    private final String business =
            "producer-test-" + UUID.randomUUID().toString().substring(0, 8);
    private final DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
    private LettuceConnectionFactory factory;
    private RedisDelayedMessageProducer producer;

    @BeforeEach
    void connect() {
        factory = LocalRedis.connect();
        producer = new RedisDelayedMessageProducer(factory, 16, Duration.ZERO, DelayQueueKeys::forBusiness);
    }

    @AfterEach
    void cleanUp() {
        try (RedisConnection c = factory.getConnection()) {
            for (int i = 0; i < 16; i++) {
                c.keyCommands().del(b(keys.shard(i)), b(keys.payloads(i)));
            }
            c.keyCommands().del(b(keys.meta()));
        }
        factory.destroy();
    }

    @Test
    void scheduleAfterCountsTheDelayFromRedisTime() {
        long before = redisTime();
        long due = producer.scheduleAfter(business, "remind user 42", Duration.ofSeconds(5));
        long after = redisTime();
        assertThat(due).isBetween(before + 5000, after + 5000);
        assertThat(score(keys.shard(ShardSelector.shardOf("remind user 42", 16)), "remind user 42"))
                .isEqualTo((double) due);
    }

    @Test
    void scheduleAtAnInstantStoresItAsTheScore() {
        long due = producer.schedule(business, "at instant", Instant.ofEpochMilli(1_900_000_000_123L));
        assertThat(due).isEqualTo(1_900_000_000_123L);
        assertThat(score(keys.shard(ShardSelector.shardOf("at instant", 16)), "at instant"))
                .isEqualTo(1.900000000123E12);
    }

    @Test
    void publishesAWakeUpOnlyWhenTheEntryBecomesTheEarliestOfItsShard() {
        List<String> wakes = new CopyOnWriteArrayList<>();
        RedisMessageListenerContainer container = new RedisMessageListenerContainer();
        container.setConnectionFactory(factory);
        container.addMessageListener(
                (message, pattern) -> wakes.add(new String(message.getBody(), StandardCharsets.UTF_8)),
                new ChannelTopic(keys.wake()));
        container.afterPropertiesSet();
        container.start();
        try {
            String[] sameShard = twoKeysInOneShard();
            int shard = ShardSelector.shardOf(sameShard[0], 16);
            long now = redisTime();
            producer.schedule(business, sameShard[0], Instant.ofEpochMilli(now + 10_000));
            producer.schedule(business, sameShard[1], Instant.ofEpochMilli(now + 20_000));
            producer.scheduleById(business, sameShard[1] + "-later", "x", Instant.ofEpochMilli(now + 30_000));
            producer.schedule(business, "third " + sameShard[0], Instant.ofEpochMilli(now + 60_000));
            producer.reschedule(business, sameShard[1], Instant.ofEpochMilli(now + 5_000));
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> wakes.stream()
                                    .filter(w -> w.startsWith(shard + ":"))
                                    .count()
                            >= 2);
            assertThat(wakes)
                    .filteredOn(w -> w.startsWith(shard + ":"))
                    .as("the 20 s entry was not the earliest of its shard: no wake-up")
                    .containsExactly(shard + ":" + (now + 10_000), shard + ":" + (now + 5_000));
        } finally {
            container.stop();
            try {
                container.destroy();
            } catch (Exception ignored) {
                // closing
            }
        }
    }

    @Test
    void readsTheShardCountFromMetaAndFallsBackToTheDefault() {
        assertThat(producer.shardCount(business)).isEqualTo(16);
        hset(keys.meta(), MetaFields.SHARDS, "4");
        producer.schedule(business, "order-1001", Instant.ofEpochMilli(1_900_000_000_000L));
        assertThat(score(keys.shard(230890041 % 4), "order-1001")).isNotNull();
        hset(keys.meta(), MetaFields.SHARDS, "many");
        assertThat(producer.shardCount(business)).as("garbage in meta: default").isEqualTo(16);
    }

    @Test
    void cancelRescheduleCountAndPeekFindEntriesScheduledUnderAnEarlierShardCount() {
        producer.scheduleById(business, "order-1001", "{\"cancel\":1001}", Instant.ofEpochMilli(1_900_000_000_000L));
        assertThat(score(keys.shard(9), "order-1001")).as("CRC32 mod 16").isNotNull();
        hset(keys.meta(), MetaFields.SHARDS, "7");
        hset(keys.meta(), MetaFields.DRAINING, "16");
        hset(keys.meta(), MetaFields.HISTORY, "16");
        assertThat(producer.rescheduleById(business, "order-1001", Instant.ofEpochMilli(1_900_000_000_500L)))
                .isTrue();
        assertThat(score(keys.shard(9), "order-1001")).isEqualTo(1.9000000005E12);
        assertThat(producer.count(business)).isEqualTo(1);
        assertThat(producer.peek(business, 5)).singleElement().satisfies(e -> assertThat(
                        new String(e.message(), StandardCharsets.UTF_8))
                .isEqualTo("{\"cancel\":1001}"));
        assertThat(producer.cancelById(business, "order-1001")).isTrue();
        assertThat(producer.count(business)).isZero();
        try (RedisConnection c = factory.getConnection()) {
            assertThat(c.hashCommands().hLen(b(keys.payloads(9)))).isZero();
        }
    }

    @Test
    void historyAloneStillFindsEntriesInShardsBelowTheNewCount() {
        producer.scheduleById(business, "order-1001", "{\"cancel\":1001}", Instant.ofEpochMilli(1_900_000_000_000L));
        hset(keys.meta(), MetaFields.SHARDS, "10");
        hset(keys.meta(), MetaFields.HISTORY, "16,4");
        assertThat(ShardSelector.shardOf("order-1001", 10))
                .as("hashes elsewhere under the new count")
                .isEqualTo(1);
        assertThat(producer.count(business)).as("shard 9 < 10 is still scanned").isEqualTo(1);
        assertThat(producer.cancelById(business, "order-1001")).isTrue();
    }

    @Test
    void peekReturnsTheEarliestEntriesOverAllShards() {
        long base = 1_900_000_000_000L;
        for (int i = 0; i < 40; i++) {
            producer.schedule(business, "m" + i, Instant.ofEpochMilli(base + (39 - i) * 10L));
        }
        assertThat(producer.peek(business, 3))
                .extracting(ScheduledEntry::memberAsString)
                .containsExactly("m39", "m38", "m37");
        assertThat(producer.count(business)).isEqualTo(40);
    }

    @Test
    void rejectsBadArgumentsNamingTheValue() {
        assertThatThrownBy(() -> producer.scheduleByIdAfter(business, "", "x", Duration.ofSeconds(1)))
                .hasMessage("id must not be empty, was ''");
        assertThatThrownBy(() -> producer.scheduleAfter(business, "x", Duration.ofSeconds(-1)))
                .hasMessage("delay must be zero or positive, was PT-1S");
        assertThatThrownBy(() -> producer.schedule("bad{name}", "x", Instant.now()))
                .hasMessageContaining("was 'bad{name}'");
    }

    @Test
    void builderRejectsSettingsOutOfRangeNamingTheValue() {
        assertThatThrownBy(() -> RedisDelayedMessageProducer.builder(factory)
                        .defaultShards(0)
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("relay.producer.default-shards must be >= 1, was 0");
        assertThatThrownBy(() -> RedisDelayedMessageProducer.builder(factory)
                        .metaCacheTtl(Duration.ofSeconds(-1))
                        .build())
                .hasMessage("relay.producer.meta-cache-ttl must be zero or positive, was PT-1S");
        assertThatThrownBy(
                        () -> new RedisDelayedMessageProducer(factory, -2, Duration.ZERO, DelayQueueKeys::forBusiness))
                .hasMessage("relay.producer.default-shards must be >= 1, was -2");
    }

    @Test
    void builderDefaultsMatchTheProducerProperties() {
        assertThat(RedisDelayedMessageProducer.DEFAULT_SHARDS)
                .isEqualTo(io.delayrelay.api.autoconfigure.DelayRelayProducerProperties.DEFAULT_SHARDS);
        assertThat(RedisDelayedMessageProducer.DEFAULT_META_CACHE_TTL)
                .isEqualTo(io.delayrelay.api.autoconfigure.DelayRelayProducerProperties.DEFAULT_META_CACHE_TTL);
        RedisDelayedMessageProducer built = RedisDelayedMessageProducer.builder(factory)
                .defaultShards(3)
                .metaCacheTtl(Duration.ZERO)
                .keys(DelayQueueKeys::forBusiness)
                .build();
        assertThat(built.shardCount(business)).isEqualTo(3);
    }

    private static String[] twoKeysInOneShard() {
        String first = "wake-a";
        int shard = ShardSelector.shardOf(first, 16);
        for (int i = 0; ; i++) {
            String candidate = "wake-b" + i;
            if (ShardSelector.shardOf(candidate, 16) == shard) {
                return new String[] {first, candidate};
            }
        }
    }

    private long redisTime() {
        try (RedisConnection c = factory.getConnection()) {
            return c.serverCommands().time();
        }
    }

    private Double score(String key, String member) {
        try (RedisConnection c = factory.getConnection()) {
            return c.zSetCommands().zScore(b(key), b(member));
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
