package io.delayrelay.app.engine;

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
 * The relay's delivery keys of a shard: pop, ack, requeue and release, each one Lua script call (one cluster slot,
 * or several shards of a standalone Redis in one call). The other key families have stores of their own:
 * {@link TopologyStore} (K:meta), {@link SeatStore} (seats, shared rounds), {@link RateGovernor} (K:rate), {@code cold.ColdStore}.
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
        return PopReply.parse(reply, token, carried, System.nanoTime());
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
        int requeued = (int) PopReply.asLong(reply.get(0));
        int deadCount = (int) PopReply.asLong(reply.get(1));
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
