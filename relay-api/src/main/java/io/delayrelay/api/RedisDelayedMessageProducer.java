package io.delayrelay.api;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.LongSupplier;

import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.api.internal.ShardTopology;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;

/**
 * {@link DelayedMessageProducer} on Spring Data Redis. Every write is one Lua script on one shard (one cluster
 * slot). The shard count is read from {@code K:meta} and cached for {@code metaCacheTtl}; when the relay has not
 * written it yet, {@code defaultShards} is used. Built with {@link #builder(RedisConnectionFactory)}.
 */
public class RedisDelayedMessageProducer implements DelayedMessageProducer {

    /** The shard count used while {@code K:meta} has none, unless the builder sets another. */
    public static final int DEFAULT_SHARDS = 16;
    /** How long a {@code K:meta} reading is used, unless the builder sets another. */
    public static final Duration DEFAULT_META_CACHE_TTL = Duration.ofSeconds(5);

    private final RedisTemplate<byte[], byte[]> redis;
    private final Function<String, DelayQueueKeys> keysFor;
    private final TopologyCache topologies;
    private final ShardReader reader;
    private final BatchScheduler batches;

    /** A producer with the given settings; the same as {@link #builder(RedisConnectionFactory)} with them. */
    public RedisDelayedMessageProducer(
            RedisConnectionFactory connectionFactory,
            int defaultShards,
            Duration metaCacheTtl,
            Function<String, DelayQueueKeys> keysFor) {
        this(builder(connectionFactory)
                .defaultShards(defaultShards)
                .metaCacheTtl(metaCacheTtl)
                .keys(keysFor)
                .checked());
    }

    private RedisDelayedMessageProducer(Builder b) {
        this.redis = ByteRedisTemplates.create(b.connectionFactory);
        this.topologies = new TopologyCache(redis, b.defaultShards, b.metaCacheTtl.toNanos(), b.nanoClock);
        this.reader = new ShardReader(redis);
        this.batches = new BatchScheduler(new PipelinedScripts(redis, b.connectionFactory));
        Function<String, DelayQueueKeys> keysFor = b.keysFor;
        Map<String, DelayQueueKeys> keysByBusiness = new ConcurrentHashMap<>();
        this.keysFor = business -> keysByBusiness.computeIfAbsent(business, keysFor);
    }

    /**
     * A builder of a producer on {@code connectionFactory}: {@value #DEFAULT_SHARDS} default shards, a 5s meta cache
     * and the default source key {@code delayqueue:<business>} unless set.
     */
    public static Builder builder(RedisConnectionFactory connectionFactory) {
        return new Builder(connectionFactory);
    }

    /** A producer for businesses using the default source key {@code delayqueue:<business>}. */
    public static RedisDelayedMessageProducer withDefaultKeys(RedisConnectionFactory connectionFactory) {
        return builder(connectionFactory).build();
    }

    /** Builds a {@link RedisDelayedMessageProducer}; {@link #build()} checks the values and names a bad one. */
    public static final class Builder {
        private final RedisConnectionFactory connectionFactory;
        private int defaultShards = DEFAULT_SHARDS;
        private Duration metaCacheTtl = DEFAULT_META_CACHE_TTL;
        private Function<String, DelayQueueKeys> keysFor = DelayQueueKeys::forBusiness;
        private LongSupplier nanoClock = System::nanoTime;

        private Builder(RedisConnectionFactory connectionFactory) {
            this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
        }

        /** The shard count a business's entries hash into while its {@code K:meta} holds none (at least 1). */
        public Builder defaultShards(int value) {
            defaultShards = value;
            return this;
        }

        /** How long a business's {@code K:meta} reading is used before it is read again (0: every call). */
        public Builder metaCacheTtl(Duration value) {
            metaCacheTtl = value;
            return this;
        }

        /** The keys of each business, e.g. {@code DelayQueueKeys::forBusiness}; called once per business. */
        public Builder keys(Function<String, DelayQueueKeys> value) {
            keysFor = value;
            return this;
        }

        /** The monotonic clock of the meta cache (tests). */
        Builder nanoClock(LongSupplier value) {
            nanoClock = value;
            return this;
        }

        /** The producer; throws {@link IllegalArgumentException} naming a value out of range. */
        public RedisDelayedMessageProducer build() {
            return new RedisDelayedMessageProducer(checked());
        }

        private Builder checked() {
            if (defaultShards < 1) {
                throw new IllegalArgumentException("relay.producer.default-shards must be >= 1, was " + defaultShards);
            }
            if (metaCacheTtl == null || metaCacheTtl.isNegative()) {
                throw new IllegalArgumentException(
                        "relay.producer.meta-cache-ttl must be zero or positive, was " + metaCacheTtl);
            }
            Objects.requireNonNull(keysFor, "keys");
            Objects.requireNonNull(nanoClock, "nanoClock");
            return this;
        }
    }

    @Override
    public long schedule(String business, byte[] message, Instant dueAt) {
        return write(business, requireMessage(message), ProducerScripts.AT, dueAt.toEpochMilli(), null);
    }

    @Override
    public long scheduleAfter(String business, byte[] message, Duration delay) {
        return write(business, requireMessage(message), ProducerScripts.AFTER, requireDelay(delay), null);
    }

    @Override
    public long scheduleById(String business, String id, byte[] message, Instant dueAt) {
        return write(business, idBytes(id), ProducerScripts.AT, dueAt.toEpochMilli(), requireMessage(message));
    }

    @Override
    public long scheduleByIdAfter(String business, String id, byte[] message, Duration delay) {
        return write(business, idBytes(id), ProducerScripts.AFTER, requireDelay(delay), requireMessage(message));
    }

    @Override
    public long scheduleById(String business, String id, byte[] message, Instant dueAt, ScheduleOptions options) {
        return write(
                business,
                idBytes(id),
                ProducerScripts.AT,
                dueAt.toEpochMilli(),
                requireMessage(message),
                ProducerScripts.optionArguments(options));
    }

    @Override
    public long scheduleByIdAfter(String business, String id, byte[] message, Duration delay, ScheduleOptions options) {
        return write(
                business,
                idBytes(id),
                ProducerScripts.AFTER,
                requireDelay(delay),
                requireMessage(message),
                ProducerScripts.optionArguments(options));
    }

    @Override
    public boolean cancel(String business, byte[] message) {
        return remove(business, requireMessage(message));
    }

    @Override
    public boolean cancelById(String business, String id) {
        return remove(business, idBytes(id));
    }

    @Override
    public boolean reschedule(String business, byte[] message, Instant dueAt) {
        return move(business, requireMessage(message), dueAt);
    }

    @Override
    public boolean rescheduleById(String business, String id, Instant dueAt) {
        try {
            return move(business, idBytes(id), dueAt);
        } catch (RuntimeException e) {
            throw RescheduleAfterExpiryException.ifRefused(business, id, dueAt.toEpochMilli(), e);
        }
    }

    @Override
    public long count(String business) {
        DelayQueueKeys keys = keysFor.apply(business);
        int width = topology(business, keys).scanWidth();
        return reader.count(keys, width);
    }

    @Override
    public List<ScheduledEntry> peek(String business, int limit) {
        if (limit < 1) {
            return List.of();
        }
        DelayQueueKeys keys = keysFor.apply(business);
        int width = topology(business, keys).scanWidth();
        return reader.peek(keys, width, limit);
    }

    /**
     * The shard count this producer writes a business's new entries under: from {@code K:meta}, cached for
     * {@code meta-cache-ttl}, else the configured default.
     */
    public int shardCount(String business) {
        return topology(business, keysFor.apply(business)).shards();
    }

    private ShardTopology topology(String business, DelayQueueKeys keys) {
        return topologies.topology(business, keys);
    }

    /**
     * Schedules into the shard the member hashes to now, then removes copies of it from the shards it hashed to
     * under earlier shard counts: scheduling an existing member (by id or by message) after a shard-count change
     * replaces it instead of adding a second live entry. New copy first, old ones after: an interruption in between
     * leaves one copy too many (delivered at least once), never none.
     */
    private long write(String business, byte[] member, byte[] mode, long millis, byte[] payload) {
        return write(business, member, mode, millis, payload, null);
    }

    private long write(String business, byte[] member, byte[] mode, long millis, byte[] payload, byte[][] options) {
        DelayQueueKeys keys = keysFor.apply(business);
        ShardTopology topology = topology(business, keys);
        int shard = ShardSelector.shardOf(member, topology.shards());
        Long due = redis.execute(ProducerScripts.SCHEDULE, ProducerScripts.keys(keys, shard), (Object[])
                ProducerScripts.scheduleArguments(keys, shard, member, mode, millis, payload, options));
        for (int earlier : topology.candidateShards(member)) {
            if (earlier != shard) {
                cancelIn(keys, earlier, member);
            }
        }
        return due == null ? -1 : due;
    }

    /**
     * Every schedule of the batch is sent before the first reply is awaited, then the removals of copies left under
     * earlier shard counts: two round trips. A request that failed is not followed by removals (its earlier copy stays
     * the live one).
     */
    @Override
    public long[] scheduleAll(String business, List<ScheduleRequest> requests) {
        ScheduleRequest.checkBatch(requests);
        if (requests.isEmpty()) {
            return new long[0];
        }
        DelayQueueKeys keys = keysFor.apply(business);
        return batches.scheduleAll(business, keys, topology(business, keys), requests);
    }

    /**
     * Moves the member in the first shard that holds it (now, then under earlier shard counts) and removes any
     * other copy, so exactly one live entry remains.
     */
    private boolean move(String business, byte[] member, Instant dueAt) {
        DelayQueueKeys keys = keysFor.apply(business);
        boolean moved = false;
        for (int shard : topology(business, keys).candidateShards(member)) {
            if (moved) {
                cancelIn(keys, shard, member);
                continue;
            }
            Long due = redis.execute(
                    ProducerScripts.RESCHEDULE,
                    ProducerScripts.keys(keys, shard),
                    member,
                    ProducerScripts.AT,
                    bytes(Long.toString(dueAt.toEpochMilli())),
                    bytes(keys.wake()),
                    bytes(Integer.toString(shard)));
            moved = due != null && due >= 0;
        }
        return moved;
    }

    /** Removes the member from every shard it may be in: it may have been scheduled under several shard counts. */
    private boolean remove(String business, byte[] member) {
        DelayQueueKeys keys = keysFor.apply(business);
        boolean removed = false;
        for (int shard : topology(business, keys).candidateShards(member)) {
            removed |= cancelIn(keys, shard, member);
        }
        return removed;
    }

    private boolean cancelIn(DelayQueueKeys keys, int shard, byte[] member) {
        Long removed = redis.execute(ProducerScripts.CANCEL, ProducerScripts.keys(keys, shard), member);
        return removed != null && removed > 0;
    }

    private static byte[] bytes(String s) {
        return DelayQueueKeys.bytes(s);
    }

    private static byte[] requireMessage(byte[] message) {
        return Objects.requireNonNull(message, "message");
    }

    private static byte[] idBytes(String id) {
        if (id == null || id.isEmpty()) {
            throw new IllegalArgumentException("id must not be empty, was '" + id + "'");
        }
        return bytes(id);
    }

    private static long requireDelay(Duration delay) {
        if (delay == null || delay.isNegative()) {
            throw new IllegalArgumentException("delay must be zero or positive, was " + delay);
        }
        return delay.toMillis();
    }
}
