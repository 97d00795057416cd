package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.LongSupplier;

import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.api.internal.ShardTopology;
import io.delayrelay.api.internal.TraceContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.zset.Tuple;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * {@link DelayedMessageProducer} on Spring Data Redis. Every write is one Lua script on one shard (one cluster
 * slot). The shard count is read from {@code K:meta} and cached for {@code metaCacheTtl}; when the relay has not
 * written it yet, {@code defaultShards} is used.
 */
public class RedisDelayedMessageProducer implements DelayedMessageProducer {

    private static final Logger log = LoggerFactory.getLogger(RedisDelayedMessageProducer.class);

    /** Hot and cold entries of one shard, read only; see shard-count.lua. */
    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> SHARD_COUNT =
            LuaScripts.load("io/delayrelay/api/internal/shard-count.lua", List.class);

    private final RedisTemplate<byte[], byte[]> redis;
    private final PipelinedScripts pipelined;
    private final Function<String, DelayQueueKeys> keysFor;
    private final int defaultShards;
    private final long metaCacheTtlNanos;
    private final LongSupplier nanoClock;
    private final Map<String, CachedTopology> topologies = new ConcurrentHashMap<>();

    public RedisDelayedMessageProducer(
            RedisConnectionFactory connectionFactory,
            int defaultShards,
            Duration metaCacheTtl,
            Function<String, DelayQueueKeys> keysFor) {
        this(connectionFactory, defaultShards, metaCacheTtl, keysFor, System::nanoTime);
    }

    RedisDelayedMessageProducer(
            RedisConnectionFactory connectionFactory,
            int defaultShards,
            Duration metaCacheTtl,
            Function<String, DelayQueueKeys> keysFor,
            LongSupplier nanoClock) {
        if (defaultShards < 1) {
            throw new IllegalArgumentException("relay.producer.default-shards must be >= 1, was " + defaultShards);
        }
        this.redis = ByteRedisTemplates.create(connectionFactory);
        this.pipelined = new PipelinedScripts(redis, connectionFactory);
        this.defaultShards = defaultShards;
        this.metaCacheTtlNanos = metaCacheTtl.toNanos();
        Objects.requireNonNull(keysFor, "keysFor");
        Map<String, DelayQueueKeys> keysByBusiness = new ConcurrentHashMap<>();
        this.keysFor = business -> keysByBusiness.computeIfAbsent(business, keysFor);
        this.nanoClock = nanoClock;
    }

    /** A producer for businesses using the default source key {@code delayqueue:<business>}. */
    public static RedisDelayedMessageProducer withDefaultKeys(RedisConnectionFactory connectionFactory) {
        return new RedisDelayedMessageProducer(
                connectionFactory, 16, Duration.ofSeconds(5), DelayQueueKeys::forBusiness);
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
                optionArguments(options));
    }

    @Override
    public long scheduleByIdAfter(String business, String id, byte[] message, Duration delay, ScheduleOptions options) {
        return write(
                business,
                idBytes(id),
                ProducerScripts.AFTER,
                requireDelay(delay),
                requireMessage(message),
                optionArguments(options));
    }

    /** schedule.lua's ARGV[7..]: the expiry, then header name, value pairs (the current trace context added). */
    private static byte[][] optionArguments(ScheduleOptions options) {
        Objects.requireNonNull(options, "options");
        Map<String, String> headers = new LinkedHashMap<>(options.headers());
        TraceContext.current().forEach(headers::putIfAbsent);
        byte[][] args = new byte[1 + 2 * headers.size()][];
        args[0] = bytes(options.expiryArgument());
        int i = 1;
        for (Map.Entry<String, String> h : headers.entrySet()) {
            args[i++] = bytes(h.getKey());
            args[i++] = bytes(h.getValue());
        }
        return args;
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
        long sum = 0;
        // one script call per shard (one slot each): the shard zset's size and the cold tier's live count
        for (int i = 0; i < width; i++) {
            List<?> counts = redis.execute(SHARD_COUNT, List.of(bytes(keys.shard(i)), bytes(keys.coldMeta(i))));
            for (Object n : counts == null ? List.of() : counts) {
                sum += ((Number) n).longValue();
            }
        }
        return sum;
    }

    @Override
    public List<ScheduledEntry> peek(String business, int limit) {
        if (limit < 1) {
            return List.of();
        }
        DelayQueueKeys keys = keysFor.apply(business);
        int width = topology(business, keys).scanWidth();
        List<ScheduledEntry> all = new ArrayList<>();
        for (int shard = 0; shard < width; shard++) {
            all.addAll(peekShard(keys, shard, limit));
        }
        all.sort(Comparator.comparingLong(ScheduledEntry::dueAtMs));
        return all.size() > limit ? List.copyOf(all.subList(0, limit)) : List.copyOf(all);
    }

    private List<ScheduledEntry> peekShard(DelayQueueKeys keys, int shard, int limit) {
        byte[] shardKey = DelayQueueKeys.bytes(keys.shard(shard));
        byte[] payloadKey = DelayQueueKeys.bytes(keys.payloads(shard));
        return redis.execute((RedisCallback<List<ScheduledEntry>>) connection -> {
            Set<Tuple> tuples = connection.zSetCommands().zRangeWithScores(shardKey, 0, limit - 1);
            if (tuples == null || tuples.isEmpty()) {
                return List.of();
            }
            byte[][] members = tuples.stream().map(Tuple::getValue).toArray(byte[][]::new);
            List<byte[]> payloads = connection.hashCommands().hMGet(payloadKey, members);
            List<ScheduledEntry> entries = new ArrayList<>(members.length);
            int i = 0;
            for (Tuple tuple : tuples) {
                byte[] payload = payloads == null ? null : payloads.get(i);
                entries.add(new ScheduledEntry(
                        shard, tuple.getValue(), payload, tuple.getScore().longValue()));
                i++;
            }
            return entries;
        });
    }

    /**
     * The shard count this producer writes a business's new entries under: from {@code K:meta}, cached for
     * {@code meta-cache-ttl}, else the configured default.
     */
    public int shardCount(String business) {
        return topology(business, keysFor.apply(business)).shards();
    }

    private ShardTopology topology(String business, DelayQueueKeys keys) {
        long now = nanoClock.getAsLong();
        CachedTopology cached = topologies.get(business);
        if (cached != null && now - cached.readAtNanos < metaCacheTtlNanos) {
            return cached.topology;
        }
        ShardTopology fresh = readTopology(business, keys);
        topologies.put(business, new CachedTopology(fresh, now));
        return fresh;
    }

    private ShardTopology readTopology(String business, DelayQueueKeys keys) {
        byte[] metaKey = DelayQueueKeys.bytes(keys.meta());
        List<byte[]> fields = redis.execute((RedisCallback<List<byte[]>>) connection -> connection
                .hashCommands()
                .hMGet(
                        metaKey,
                        DelayQueueKeys.bytes(MetaFields.SHARDS),
                        DelayQueueKeys.bytes(MetaFields.DRAINING),
                        DelayQueueKeys.bytes(MetaFields.HISTORY)));
        byte[] shardsField = fields == null ? null : fields.get(0);
        if (shardsField == null) {
            return ShardTopology.of(defaultShards);
        }
        String text = new String(shardsField, StandardCharsets.UTF_8);
        int shards;
        try {
            shards = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            shards = -1;
        }
        if (shards < 1) {
            log.warn(
                    "business={} {} field '{}' is '{}', not a positive number; using default shards {}",
                    business,
                    keys.meta(),
                    MetaFields.SHARDS,
                    text,
                    defaultShards);
            return ShardTopology.of(defaultShards);
        }
        return new ShardTopology(
                shards, ShardTopology.parseList(text(fields.get(1))), ShardTopology.parseList(text(fields.get(2))));
    }

    private static String text(byte[] field) {
        return field == null ? null : new String(field, StandardCharsets.UTF_8);
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
                scheduleArguments(keys, shard, member, mode, millis, payload, options));
        for (int earlier : topology.candidateShards(member)) {
            if (earlier != shard) {
                cancelIn(keys, earlier, member);
            }
        }
        return due == null ? -1 : due;
    }

    /** schedule.lua's ARGV (see contract/schedule.lua). */
    private static byte[][] scheduleArguments(
            DelayQueueKeys keys, int shard, byte[] member, byte[] mode, long millis, byte[] payload, byte[][] options) {
        List<byte[]> args = new ArrayList<>(List.of(
                member, mode, bytes(Long.toString(millis)), bytes(keys.wake()), bytes(Integer.toString(shard))));
        if (payload != null) {
            args.add(payload);
            if (options != null) {
                args.addAll(List.of(options));
            }
        }
        return args.toArray(new byte[0][]);
    }

    /**
     * Every schedule of the batch is sent before the first reply is awaited (with Lettuce; other clients send them
     * one by one), then, for the requests whose member may also sit in a shard of an earlier shard count (only while
     * a reshard's history is kept), the removals of those copies, in one more round trip: new copy first, old ones
     * after, as {@link #scheduleById}. A request that failed is not followed by removals (its earlier copy stays the
     * live one).
     */
    @Override
    public long[] scheduleAll(String business, List<ScheduleRequest> requests) {
        ScheduleRequest.checkBatch(requests);
        long[] due = new long[requests.size()];
        if (due.length == 0) {
            return due;
        }
        DelayQueueKeys keys = keysFor.apply(business);
        ShardTopology topology = topology(business, keys);
        int[] shards = new int[due.length];
        List<PipelinedScripts.Call> calls = new ArrayList<>(due.length);
        for (ScheduleRequest request : requests) {
            byte[] member = request.member();
            int shard = ShardSelector.shardOf(member, topology.shards());
            shards[calls.size()] = shard;
            byte[] mode = request.dueAt() != null ? ProducerScripts.AT : ProducerScripts.AFTER;
            long millis = request.dueAt() != null
                    ? request.dueAt().toEpochMilli()
                    : request.delay().toMillis();
            byte[][] options = request.options() == null ? null : optionArguments(request.options());
            calls.add(new PipelinedScripts.Call(
                    ProducerScripts.SCHEDULE,
                    ProducerScripts.keys(keys, shard),
                    scheduleArguments(keys, shard, member, mode, millis, request.payload(), options)));
        }
        Map<Integer, RuntimeException> failures = new TreeMap<>();
        List<Object> replies = pipelined.run(calls);
        List<PipelinedScripts.Call> removals = new ArrayList<>();
        List<Integer> removalOf = new ArrayList<>();
        for (int i = 0; i < due.length; i++) {
            Object reply = replies.get(i);
            if (reply instanceof RuntimeException e) {
                due[i] = -1;
                failures.put(i, e);
                continue;
            }
            due[i] = reply == null ? -1 : (Long) reply;
            byte[] member = requests.get(i).member();
            for (int earlier : topology.candidateShards(member)) {
                if (earlier != shards[i]) {
                    removals.add(new PipelinedScripts.Call(
                            ProducerScripts.CANCEL, ProducerScripts.keys(keys, earlier), new byte[][] {member}));
                    removalOf.add(i);
                }
            }
        }
        if (!removals.isEmpty()) {
            List<Object> removed = pipelined.run(removals);
            for (int k = 0; k < removed.size(); k++) {
                if (removed.get(k) instanceof RuntimeException e) {
                    // scheduled, but an earlier copy may still be live too: said, as the single call would throw
                    failures.putIfAbsent(removalOf.get(k), e);
                }
            }
        }
        if (!failures.isEmpty()) {
            throw new ScheduleBatchException(business, due, failures);
        }
        return due;
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

    private record CachedTopology(ShardTopology topology, long readAtNanos) {}
}
