package io.delayrelay.app.engine;

import java.time.Duration;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.delayrelay.api.ByteRedisTemplates;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.ShardTopology;
import io.delayrelay.api.support.LuaScripts;
import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/** The relay's Redis operations on one shard: each is one Lua script call on one cluster slot. */
public class ShardStore {

    private static final RedisScript<List> POP = script("pop");
    private static final RedisScript<Long> ACK = lua("ack", Long.class);
    private static final RedisScript<List> REQUEUE = script("requeue");
    private static final RedisScript<byte[]> RESHARD = lua("reshard", byte[].class);
    private static final RedisScript<byte[]> UNDRAIN = lua("undrain", byte[].class);
    private static final RedisScript<Long> SHARD_SIZE = lua("shard-size", Long.class);

    private final RedisTemplate<byte[], byte[]> redis;

    public ShardStore(RedisConnectionFactory connectionFactory) {
        this.redis = ByteRedisTemplates.create(connectionFactory);
    }

    /** Moves up to batch-size due entries of the shard into flight. */
    public PopResult pop(BusinessSpec spec, int shard) {
        DelayQueueKeys keys = spec.keys();
        List<?> reply = redis.execute(POP, keys.shardKeyBytes(shard, DelayQueueKeys.SHARD,
                DelayQueueKeys.PAYLOADS, DelayQueueKeys.INFLIGHT, DelayQueueKeys.ATTEMPTS), num(spec.batchSize()), num(spec.lease().toMillis()));
        long now = asLong(reply.get(0));
        int n = (int) asLong(reply.get(1));
        long nextDue = asLong(reply.get(2));
        List<PopResult.Entry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int base = 3 + i * 4;
            byte[] member = (byte[]) reply.get(base);
            long due = parseScore((byte[]) reply.get(base + 1));
            byte[] payload = (byte[]) reply.get(base + 2);
            byte[] attempts = (byte[]) reply.get(base + 3);
            entries.add(new PopResult.Entry(member, due, payload,
                    attempts == null ? 0 : Integer.parseInt(new String(attempts, StandardCharsets.US_ASCII))));
        }
        return new PopResult(now, entries, nextDue);
    }

    /** Forgets confirmed members. Returns how many were still in flight. */
    public long ack(BusinessSpec spec, int shard, List<byte[]> members) {
        if (members.isEmpty()) {
            return 0;
        }
        DelayQueueKeys keys = spec.keys();
        Long acked = redis.execute(ACK, keys.shardKeyBytes(shard, DelayQueueKeys.SHARD,
                DelayQueueKeys.PAYLOADS, DelayQueueKeys.INFLIGHT, DelayQueueKeys.ATTEMPTS), members.toArray());
        return acked == null ? 0 : acked;
    }

    /** Takes the given members out of flight: retried later, or dead once they reach {@code maxAttempts}. */
    public RequeueResult requeue(BusinessSpec spec, int shard, List<byte[]> members, int maxAttempts, String reason) {
        if (members.isEmpty()) {
            return RequeueResult.NONE;
        }
        Object[] args = new Object[6 + members.size()];
        args[0] = bytes("members");
        fillRetryArgs(args, spec, maxAttempts, reason, 0);
        for (int i = 0; i < members.size(); i++) {
            args[6 + i] = members.get(i);
        }
        return requeue(spec, shard, args);
    }

    /**
     * Puts members that never reached the broker back into the shard, due after the retry delay, without counting
     * an attempt.
     */
    public void release(BusinessSpec spec, int shard, List<byte[]> members) {
        if (members.isEmpty()) {
            return;
        }
        Object[] args = new Object[6 + members.size()];
        args[0] = bytes("release");
        fillRetryArgs(args, spec, spec.maxAttempts(), "not sent", 0);
        for (int i = 0; i < members.size(); i++) {
            args[6 + i] = members.get(i);
        }
        requeue(spec, shard, args);
    }

    /** Puts back (or dead-letters) at most {@code limit} members of the shard whose lease expired. */
    public RequeueResult requeueExpired(BusinessSpec spec, int shard, int limit) {
        Object[] args = new Object[6];
        args[0] = bytes("expired");
        fillRetryArgs(args, spec, spec.maxAttempts(), "lease expired", limit);
        return requeue(spec, shard, args);
    }

    /**
     * Claims round {@code round} of a chore shared by every relay instance (e.g. the lease reaper's pass) for
     * {@code periodMs}: true for the one instance that gets it ({@code SET K:round:<round> NX PX}), so the chore's
     * Redis cost does not grow with the number of instances.
     */
    public boolean claimRound(DelayQueueKeys keys, String round, long periodMs) {
        Boolean claimed = redis.opsForValue().setIfAbsent(bytes(keys.sourceKey() + ":round:" + round),
                ROUND_VALUE, Duration.ofMillis(Math.max(1, periodMs)));
        return Boolean.TRUE.equals(claimed);
    }

    private static final byte[] ROUND_VALUE = {'1'};

    /** Reserves {@code n} consecutive cursor values; returns the last one. */
    public long advanceCursor(DelayQueueKeys keys, int n) {
        Long value = redis.opsForValue().increment(bytes(keys.cursor()), n);
        return value == null ? 0 : value;
    }

    /**
     * Records the business's shard count in {@code K:meta}; a different earlier count joins the draining list.
     * Returns the draining shard counts.
     */
    public int[] reshard(BusinessSpec spec) {
        byte[] draining = redis.execute(RESHARD, keys(spec.keys().meta()), num(spec.shards()));
        return ShardTopology.parseList(text(draining));
    }

    /** The shard counts {@code K:meta} lists as still draining. */
    public int[] draining(DelayQueueKeys keys) {
        Object value = redis.opsForHash().get(bytes(keys.meta()), bytes(MetaFields.DRAINING));
        return ShardTopology.parseList(text((byte[]) value));
    }

    /** Removes drained shard counts from {@code K:meta}; returns those still draining. */
    public int[] undrain(DelayQueueKeys keys, int[] drained) {
        Object[] args = new Object[drained.length];
        for (int i = 0; i < drained.length; i++) {
            args[i] = num(drained[i]);
        }
        byte[] rest = redis.execute(UNDRAIN, keys(keys.meta()), args);
        return ShardTopology.parseList(text(rest));
    }

    /** Entries a shard still holds, scheduled plus in flight (read atomically). */
    public long shardSize(DelayQueueKeys keys, int shard) {
        Long size = redis.execute(SHARD_SIZE, keys.shardKeyBytes(shard, DelayQueueKeys.SHARD, DelayQueueKeys.INFLIGHT));
        return size == null ? 0 : size;
    }

    /** The template, for operations outside the hot path. */
    public RedisTemplate<byte[], byte[]> template() {
        return redis;
    }

    private RequeueResult requeue(BusinessSpec spec, int shard, Object[] args) {
        DelayQueueKeys keys = spec.keys();
        List<?> reply = redis.execute(REQUEUE, keys.shardKeyBytes(shard, DelayQueueKeys.SHARD,
                DelayQueueKeys.INFLIGHT, DelayQueueKeys.ATTEMPTS, DelayQueueKeys.DEAD, DelayQueueKeys.DEAD_REASONS), args);
        int requeued = (int) asLong(reply.get(0));
        int deadCount = (int) asLong(reply.get(1));
        List<byte[]> dead = new ArrayList<>(deadCount);
        for (int i = 0; i < deadCount; i++) {
            dead.add((byte[]) reply.get(2 + i));
        }
        return new RequeueResult(requeued, dead);
    }

    private static void fillRetryArgs(Object[] args, BusinessSpec spec, int maxAttempts, String reason, int limit) {
        args[1] = num(maxAttempts);
        args[2] = num(spec.retryDelay().toMillis());
        args[3] = num(spec.retryDelayMax().toMillis());
        args[4] = bytes(reason);
        args[5] = num(limit);
    }

    /** Result of a requeue: how many went back into the shard, and which members died. */
    public record RequeueResult(int requeued, List<byte[]> dead) {
        static final RequeueResult NONE = new RequeueResult(0, List.of());
    }

    static long parseScore(byte[] score) {
        String text = new String(score, StandardCharsets.US_ASCII);
        switch (text) {
            case "inf", "+inf":
                return Long.MAX_VALUE;
            case "-inf":
                return Long.MIN_VALUE;
            default:
                return (long) Double.parseDouble(text);
        }
    }

    private static String text(byte[] value) {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    private static long asLong(Object value) {
        return ((Number) value).longValue();
    }

    private static List<byte[]> keys(String... names) {
        List<byte[]> keys = new ArrayList<>(names.length);
        for (String name : names) {
            keys.add(bytes(name));
        }
        return keys;
    }

    private static byte[] num(long value) {
        return bytes(Long.toString(value));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @SuppressWarnings("rawtypes")
    private static RedisScript<List> script(String name) {
        return lua(name, List.class);
    }

    private static <T> RedisScript<T> lua(String name, Class<T> type) {
        return LuaScripts.load("io/delayrelay/app/lua/" + name + ".lua", type);
    }
}
