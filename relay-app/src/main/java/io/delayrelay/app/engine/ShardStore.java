package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.support.RedisClusters;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * The relay's Redis operations on one shard: each is one Lua script call on one cluster slot. Longer than 300 lines
 * because it is the one Java caller of every engine script (pop, ack, requeue, release, reshard, undrain, rounds, the
 * rate cap's bucket):
 * their KEYS and ARGV orders and reply shapes stay side by side with the scripts' contract, not spread over the loop.
 */
public class ShardStore {

    private static final Logger log = LoggerFactory.getLogger(ShardStore.class);
    private static final RedisScript<List> POP = script("pop");
    private static final RedisScript<Long> ACK = lua("ack", Long.class);
    private static final RedisScript<List> REQUEUE = script("requeue");

    /**
     * How long a due schedule held back by its member's unsettled flight waits before a pop looks at it again: a
     * flight usually settles within a confirm round trip.
     */
    static final long BLOCKED_RECHECK_MS = 50;

    /** pop.lua's reply header of one shard: now, n, nextDue, expired, late; the entries follow, then the late ones. */
    private static final int POP_HEADER = 5;

    /** pop.lua's ARGV before the carried ack sections. */
    private static final int POP_FIXED_ARGS = 10;

    private static final byte[] DROP = bytes("drop");
    private static final byte[] DEAD = bytes("dead");
    private static final byte[] NO_LIMIT = bytes("");

    /** A flag argument of pop.lua (the shard is known due) and ack.lua (a member had a payload). */
    private static final byte[] YES = {'1'};

    private static final byte[] NO = {'0'};

    /** Keys of pop.lua, in its KEYS order. */
    private static final int[] POP_KEYS = {
        DelayQueueKeys.SHARD,
        DelayQueueKeys.PAYLOADS,
        DelayQueueKeys.INFLIGHT,
        DelayQueueKeys.ATTEMPTS,
        DelayQueueKeys.DEAD,
        DelayQueueKeys.DEAD_REASONS
    };
    /** Keys of ack.lua, in its KEYS order. */
    private static final int[] ACK_KEYS = {
        DelayQueueKeys.SHARD,
        DelayQueueKeys.PAYLOADS,
        DelayQueueKeys.INFLIGHT,
        DelayQueueKeys.ATTEMPTS,
        DelayQueueKeys.DEAD
    };
    /** Keys of requeue.lua, in its KEYS order. */
    private static final int[] REQUEUE_KEYS = {
        DelayQueueKeys.INFLIGHT, DelayQueueKeys.ATTEMPTS, DelayQueueKeys.DEAD, DelayQueueKeys.DEAD_REASONS
    };

    private final RedisTemplate<byte[], byte[]> redis;
    /** Lease tokens: unique per pop across instances (a random 64-bit prefix per store) and within one (a counter). */
    private final String tokenPrefix =
            Long.toHexString(ThreadLocalRandom.current().nextLong()) + "-";

    private final AtomicLong tokens = new AtomicLong();

    /** Whether one script call may touch several shards (standalone Redis): see {@link #combinesShards()}. */
    private volatile boolean combines;

    public ShardStore(RedisConnectionFactory connectionFactory) {
        this(ByteRedisTemplates.create(connectionFactory));
    }

    /** On the relay's byte template (the {@code relayRedisTemplate} bean the ops, metrics and fleet beans share). */
    public ShardStore(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
        this.combines = !RedisClusters.isCluster(redis.getConnectionFactory());
    }

    /** The template this store works on: the engine's other key-family stores share it. */
    RedisTemplate<byte[], byte[]> redis() {
        return redis;
    }

    /**
     * Whether pops and acks of several shards may go in one script call: not on a Redis Cluster, where the shards'
     * keys live in different slots (a call touching several would fail with CROSSSLOT). Also false once such a
     * call failed with CROSSSLOT (a cluster this store did not recognise from its connection factory).
     */
    public boolean combinesShards() {
        return combines;
    }

    /**
     * What a pop answered: one result per shard of the round, in order; how many carried members it settled; and the
     * carried acks it could not settle (a key of the wrong type), each with Redis's error. The caller acks those
     * alone, to count and log the failure with its shard. {@code receivedNanos}: {@link System#nanoTime()} when the
     * reply was in hand (a pop-ahead's {@link DueGate} counts from there).
     */
    public record Popped(
            List<PopResult> results, long settled, List<Ack> failed, List<String> errors, long receivedNanos) {

        /** The result of a round of one shard. */
        public PopResult single() {
            return results.get(0);
        }
    }

    /**
     * Leases the round's due entries (due retries first, then due schedules whose member has no unsettled delivery)
     * under one new lease token, in one pop.lua call (see its header). The round's limit (at most batch-size) and
     * batch-bytes are the whole call's, given to the shards in order; a shard left out reports
     * {@link PopResult#SKIPPED} (it is still due). With a lead the schedules due within it are taken too: the caller
     * publishes each at its due time, never before.
     * <p>
     * {@code carried} acks of earlier rounds are settled first, exactly as {@link #ack} would. Several shards or
     * carried acks need a standalone Redis ({@link #combinesShards()}). A call that fails may have settled some of
     * the acks: the caller acks them alone (settling twice changes nothing).
     */
    public Popped pop(BusinessSpec spec, Round round, List<Ack> carried) {
        DelayQueueKeys keys = spec.keys();
        String token = tokenPrefix + tokens.incrementAndGet();
        int[] shards = round.shards();
        List<byte[]> keyList = new ArrayList<>(carried.size() * ACK_KEYS.length + shards.length * POP_KEYS.length);
        for (Ack a : carried) {
            keyList.addAll(keys.shardKeyBytes(a.shard(), ACK_KEYS));
        }
        byte[] flags = new byte[shards.length];
        for (int i = 0; i < shards.length; i++) {
            keyList.addAll(keys.shardKeyBytes(shards[i], POP_KEYS));
            flags[i] = round.knownDue()[i] ? (byte) '1' : (byte) '0';
        }
        List<Object> args = new ArrayList<>(POP_FIXED_ARGS + carried.size() * 4);
        args.add(num(Math.min(round.limit(), spec.batch().size())));
        args.add(num(spec.timing().lease().toMillis()));
        args.add(bytes(token));
        args.add(num(BLOCKED_RECHECK_MS));
        args.add(num(spec.batch().bytes()));
        args.add(flags);
        args.add(
                spec.late().maxLateness() == null
                        ? NO_LIMIT
                        : num(spec.late().maxLateness().toMillis()));
        args.add(spec.late().drop() ? DROP : DEAD);
        args.add(num(Math.max(0, round.leadMs())));
        args.add(num(carried.size()));
        addAckSections(args, carried);
        List<?> reply;
        try {
            reply = redis.execute(POP, keyList, args.toArray());
        } catch (RuntimeException e) {
            if (shards.length > 1 || !carried.isEmpty()) {
                noticeCrossSlot(e);
            }
            throw e;
        }
        return parsePopped(reply, token, carried, System.nanoTime());
    }

    /** pop.lua's reply: {settled, {section, error, ...}, shards, reply of shard 1, reply of shard 2, ...}. */
    private static Popped parsePopped(List<?> reply, String token, List<Ack> carried, long receivedNanos) {
        List<?> errors = (List<?>) reply.get(1);
        List<Ack> failed = new ArrayList<>(errors.size() / 2);
        List<String> messages = new ArrayList<>(errors.size() / 2);
        for (int i = 0; i + 1 < errors.size(); i += 2) {
            failed.add(carried.get((int) asLong(errors.get(i)) - 1));
            messages.add(text((byte[]) errors.get(i + 1)));
        }
        int shards = (int) asLong(reply.get(2));
        List<PopResult> results = new ArrayList<>(shards);
        int at = 3;
        for (int g = 0; g < shards; g++) {
            at = parsePop(reply, at, token, results);
        }
        return new Popped(results, asLong(reply.get(0)), failed, messages, receivedNanos);
    }

    /** ack.lua's (and pop.lua's carried) ack sections: lease token, payload flag, member count, members. */
    private static void addAckSections(List<Object> args, List<Ack> acks) {
        for (Ack a : acks) {
            args.add(bytes(a.token()));
            args.add(a.anyPayload() ? YES : NO);
            args.add(num(a.members().size()));
            args.addAll(a.members());
        }
    }

    /** Parses one shard's pop reply starting at {@code at} into {@code results}; returns where the next one starts. */
    private static int parsePop(List<?> reply, int at, String token, List<PopResult> results) {
        long now = asLong(reply.get(at));
        int n = (int) asLong(reply.get(at + 1));
        long nextDue = asLong(reply.get(at + 2));
        int expired = (int) asLong(reply.get(at + 3));
        int lateCount = (int) asLong(reply.get(at + 4));
        List<PopResult.Entry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int base = at + POP_HEADER + i * 4;
            byte[] member = (byte[]) reply.get(base);
            long due = parseScore((byte[]) reply.get(base + 1));
            byte[] payload = (byte[]) reply.get(base + 2);
            byte[] attempts = (byte[]) reply.get(base + 3);
            entries.add(new PopResult.Entry(
                    member,
                    due,
                    payload,
                    attempts == null ? 0 : Integer.parseInt(new String(attempts, StandardCharsets.US_ASCII))));
        }
        List<PopResult.Late> late = lateCount == 0 ? List.of() : new ArrayList<>(lateCount);
        for (int i = 0; i < lateCount; i++) {
            int base = at + POP_HEADER + n * 4 + i * 3;
            byte[] expiry = (byte[]) reply.get(base + 2);
            late.add(new PopResult.Late(
                    (byte[]) reply.get(base),
                    parseScore((byte[]) reply.get(base + 1)),
                    expiry == null || expiry.length == 0 ? -1 : parseScore(expiry)));
        }
        results.add(new PopResult(now, entries, nextDue, token, expired, late));
        return at + POP_HEADER + n * 4 + lateCount * 3;
    }

    /** A call spanning slots failed on a cluster this store took for a standalone Redis: one shard per call now. */
    private void noticeCrossSlot(RuntimeException e) {
        String message = String.valueOf(Exceptions.rootMessage(e));
        if (message.contains("CROSSSLOT") && combines) {
            combines = false;
            log.warn(
                    "Redis refused a script call spanning several shards ({}): a cluster; popping and acking one shard"
                            + " per call from now on",
                    message);
        }
    }

    /** Confirmed members of one shard leased under {@code token}, to settle ({@link #ack}). */
    public record Ack(int shard, String token, List<byte[]> members, boolean anyPayload) {}

    /**
     * Settles the acks in one call of ack.lua (see its header): forgets each confirmed member still leased under its
     * ack's token; one whose lease was taken back (expired) or leased again since is left alone. {@code anyPayload}
     * false says none of an ack's members had a payload when popped (the script may skip the payload bookkeeping).
     * Acks of several shards need a standalone Redis ({@link #combinesShards()}). A call that fails (a shard's keys
     * hold the wrong type) may have settled the shards before the bad one: the caller acks them one by one, which
     * settles the rest and changes nothing for those already settled. Returns how many were settled.
     */
    public long ack(BusinessSpec spec, List<Ack> acks) {
        DelayQueueKeys keys = spec.keys();
        List<Object> args = new ArrayList<>();
        if (acks.size() == 1) {
            Ack only = acks.get(0);
            if (only.members().isEmpty()) {
                return 0;
            }
            args.add(bytes(only.token()));
            args.add(only.anyPayload() ? YES : NO);
            args.addAll(only.members());
            Long acked = redis.execute(ACK, keys.shardKeyBytes(only.shard(), ACK_KEYS), args.toArray());
            return acked == null ? 0 : acked;
        }
        List<byte[]> keyList = new ArrayList<>(acks.size() * ACK_KEYS.length);
        for (Ack a : acks) {
            keyList.addAll(keys.shardKeyBytes(a.shard(), ACK_KEYS));
        }
        addAckSections(args, acks);
        try {
            Long acked = redis.execute(ACK, keyList, args.toArray());
            return acked == null ? 0 : acked;
        } catch (RuntimeException e) {
            noticeCrossSlot(e);
            throw e;
        }
    }

    /**
     * Takes the given members leased under {@code token} out of flight: retried later, or dead once they reach
     * {@code maxAttempts}.
     */
    public RequeueResult requeue(
            BusinessSpec spec, int shard, String token, List<byte[]> members, int maxAttempts, String reason) {
        if (members.isEmpty()) {
            return RequeueResult.NONE;
        }
        return requeue(spec, shard, withMembers("members", spec, maxAttempts, reason, token, members));
    }

    /**
     * Retries members leased under {@code token} that never reached the broker after the retry delay, without
     * counting an attempt.
     */
    public void release(BusinessSpec spec, int shard, String token, List<byte[]> members) {
        if (members.isEmpty()) {
            return;
        }
        requeue(spec, shard, withMembers("release", spec, spec.retry().maxAttempts(), "not sent", token, members));
    }

    /** Retries (or dead-letters) at most {@code limit} members of the shard whose lease expired, whoever leased them. */
    public RequeueResult requeueExpired(BusinessSpec spec, int shard, int limit) {
        Object[] args = new Object[REQUEUE_FIXED_ARGS];
        args[0] = bytes("expired");
        fillRetryArgs(args, spec, spec.retry().maxAttempts(), "lease expired", limit);
        args[6] = bytes("");
        return requeue(spec, shard, args);
    }

    /**
     * Claims round {@code round} of a chore shared by every relay instance (e.g. the idle workers' safety sweep) for
     * {@code periodMs}: true for the one instance that gets it ({@code SET K:round:<round> NX PX}), so the chore's
     * Redis cost does not grow with the number of instances.
     */
    public boolean claimRound(DelayQueueKeys keys, String round, long periodMs) {
        Boolean claimed = redis.opsForValue()
                .setIfAbsent(
                        bytes(keys.sourceKey() + ":round:" + round),
                        ROUND_VALUE,
                        Duration.ofMillis(Math.max(1, periodMs)));
        return Boolean.TRUE.equals(claimed);
    }

    private static final byte[] ROUND_VALUE = {'1'};

    /** ARGV of requeue.lua before the members. */
    private static final int REQUEUE_FIXED_ARGS = 7;

    private static Object[] withMembers(
            String mode, BusinessSpec spec, int maxAttempts, String reason, String token, List<byte[]> members) {
        Object[] args = new Object[REQUEUE_FIXED_ARGS + members.size()];
        args[0] = bytes(mode);
        fillRetryArgs(args, spec, maxAttempts, reason, 0);
        args[6] = bytes(token);
        for (int i = 0; i < members.size(); i++) {
            args[REQUEUE_FIXED_ARGS + i] = members.get(i);
        }
        return args;
    }

    private RequeueResult requeue(BusinessSpec spec, int shard, Object[] args) {
        DelayQueueKeys keys = spec.keys();
        List<?> reply = redis.execute(REQUEUE, keys.shardKeyBytes(shard, REQUEUE_KEYS), args);
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
        args[2] = num(spec.retry().delay().toMillis());
        args[3] = num(spec.retry().delayMax().toMillis());
        args[4] = bytes(reason);
        args[5] = num(limit);
    }

    /**
     * Whether any of the shards holds a schedule or a delivery in flight: one multi-key {@code EXISTS} of their
     * {@code K:i} and {@code {K:i}:inflight} keys (a sweep's probe: the shards are popped only when something is
     * there). Standalone Redis only ({@link #combinesShards()}): a cluster refuses keys of several slots.
     */
    public boolean holdsAny(DelayQueueKeys keys, int[] shards) {
        if (shards.length == 0) {
            return false;
        }
        byte[][] probed = new byte[shards.length * 2][];
        for (int i = 0; i < shards.length; i++) {
            List<byte[]> pair = keys.shardKeyBytes(shards[i], DelayQueueKeys.SHARD, DelayQueueKeys.INFLIGHT);
            probed[2 * i] = pair.get(0);
            probed[2 * i + 1] = pair.get(1);
        }
        Long held = redis.execute((RedisCallback<Long>) c -> c.keyCommands().exists(probed));
        return held == null || held > 0;
    }

    /** Result of a requeue: how many went back into the shard, and which members died. */
    public record RequeueResult(int requeued, List<byte[]> dead) {
        static final RequeueResult NONE = new RequeueResult(0, List.of());
    }

    static long parseScore(byte[] score) {
        // Scores are whole milliseconds, which Redis prints as plain digits: read them without a String or a
        // double parse; anything else (exponent, fraction, inf) takes the general path, where a fraction (a raw
        // ZADD's) counts as the next whole ms: due only once reached (as ShardPeeks.dueMs), never released before.
        int length = score.length;
        if (length > 0 && length <= 18) {
            int i = score[0] == '-' ? 1 : 0;
            long value = 0;
            boolean digits = i < length;
            for (; i < length && digits; i++) {
                int d = score[i] - '0';
                digits = d >= 0 && d <= 9;
                value = value * 10 + d;
            }
            if (digits) {
                return score[0] == '-' ? -value : value;
            }
        }
        String text = new String(score, StandardCharsets.US_ASCII);
        switch (text) {
            case "inf", "+inf":
                return Long.MAX_VALUE;
            case "-inf":
                return Long.MIN_VALUE;
            default:
                return (long) Math.ceil(Double.parseDouble(text));
        }
    }

    private static String text(byte[] value) {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    private static long asLong(Object value) {
        return ((Number) value).longValue();
    }

    private static byte[] num(long value) {
        return bytes(Long.toString(value));
    }

    @SuppressWarnings("rawtypes")
    private static RedisScript<List> script(String name) {
        return lua(name, List.class);
    }

    private static <T> RedisScript<T> lua(String name, Class<T> type) {
        return LuaScripts.load("io/delayrelay/app/lua/" + name + ".lua", type);
    }
}
