package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.api.internal.ShardTopology;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
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
    private static final RedisScript<List> RESHARD = script("reshard");
    private static final RedisScript<byte[]> UNDRAIN = lua("undrain", byte[].class);
    private static final RedisScript<Long> SHARD_SIZE = lua("shard-size", Long.class);
    private static final RedisScript<List> RATE = script("rate");
    private static final RedisScript<List> SEAT = script("seat");

    /**
     * How long a due schedule held back by its member's unsettled flight waits before a pop looks at it again: a
     * flight usually settles within a confirm round trip.
     */
    static final long BLOCKED_RECHECK_MS = 50;

    /** pop.lua's reply header: now, n, nextDue, expired, late; the entries follow, then the late entries. */
    private static final int POP_HEADER = 5;

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
        this.combines = !isCluster(redis.getConnectionFactory());
    }

    /** A Redis Cluster connection factory: keys of different slots may not meet in one script call. */
    static boolean isCluster(RedisConnectionFactory factory) {
        return factory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
    }

    /**
     * Leases up to batch-size due entries of the shard (due retries first, then due schedules whose member has no
     * unsettled delivery) under a new lease token; at most batch-bytes of members and payloads (one entry at least).
     */
    public PopResult pop(BusinessSpec spec, int shard) {
        return pop(spec, shard, false);
    }

    /**
     * Like {@link #pop(BusinessSpec, int)}; {@code knownDue} says the caller knows the shard has due entries (its
     * last pop of it came back full), so the script skips its emptiness probe.
     */
    public PopResult pop(BusinessSpec spec, int shard, boolean knownDue) {
        return pop(spec, shard, knownDue, spec.batch().size());
    }

    /** Like {@link #pop(BusinessSpec, int, boolean)}, taking at most {@code limit} entries (the rate cap's allowance). */
    public PopResult pop(BusinessSpec spec, int shard, boolean knownDue, int limit) {
        return pop(spec, shard, knownDue, limit, 0);
    }

    /**
     * Like {@link #pop(BusinessSpec, int, boolean, int)}, also taking the schedules due within {@code leadMs} of the
     * pop's Redis time (pop-ahead, pop.lua's lead; 0: none, the call exactly as without it). The caller publishes
     * each entry at its due time ({@link PopResult.Entry#dueAtMs()}), never before.
     */
    public PopResult pop(BusinessSpec spec, int shard, boolean knownDue, int limit, long leadMs) {
        DelayQueueKeys keys = spec.keys();
        String token = tokenPrefix + tokens.incrementAndGet();
        List<?> reply = redis.execute(
                POP,
                keys.shardKeyBytes(shard, POP_KEYS),
                withLead(popArgs(spec, Math.min(limit, spec.batch().size()), token, knownDue ? YES : NO), leadMs));
        List<PopResult> results = new ArrayList<>(1);
        parsePop(reply, 0, token, results);
        return results.get(0);
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
     * Pops several shards in one call of pop.lua (see its header): the batch size and byte budget are the whole
     * call's, given to the shards in order ({@code shards} earliest due first); one lease token for all of them.
     * Returns one result per shard, in order; a shard the call left out because the batch or the budget was used
     * up reports {@link PopResult#SKIPPED} as its next due time (it is still due). Standalone Redis only
     * ({@link #combinesShards()}); a single shard is popped exactly as {@link #pop(BusinessSpec, int, boolean)}.
     */
    public List<PopResult> popMany(BusinessSpec spec, int[] shards, boolean[] knownDue) {
        return popMany(spec, shards, knownDue, 0);
    }

    /** Like {@link #popMany(BusinessSpec, int[], boolean[])}, with pop.lua's lead ({@code leadMs}; 0: none). */
    public List<PopResult> popMany(BusinessSpec spec, int[] shards, boolean[] knownDue, long leadMs) {
        if (shards.length == 1) {
            return List.of(
                    leadMs > 0
                            ? pop(spec, shards[0], knownDue[0], spec.batch().size(), leadMs)
                            : pop(spec, shards[0], knownDue[0]));
        }
        DelayQueueKeys keys = spec.keys();
        String token = tokenPrefix + tokens.incrementAndGet();
        List<byte[]> keyList = new ArrayList<>(shards.length * POP_KEYS.length);
        byte[] flags = new byte[shards.length];
        for (int i = 0; i < shards.length; i++) {
            keyList.addAll(keys.shardKeyBytes(shards[i], POP_KEYS));
            flags[i] = knownDue[i] ? (byte) '1' : (byte) '0';
        }
        List<?> reply;
        try {
            reply = redis.execute(
                    POP, keyList, withLead(popArgs(spec, spec.batch().size(), token, flags), leadMs));
        } catch (RuntimeException e) {
            noticeCrossSlot(e);
            throw e;
        }
        return parsePops(reply, shards.length, token);
    }

    /** A pop reply of {@code shards} shards: one shard's reply, or {shards, reply of shard 1..., ...}. */
    private static List<PopResult> parsePops(List<?> reply, int shards, String token) {
        List<PopResult> results = new ArrayList<>(shards);
        if (shards == 1) {
            parsePop(reply, 0, token, results);
            return results;
        }
        int at = 1;
        for (int g = 0; g < shards; g++) {
            at = parsePop(reply, at, token, results);
        }
        return results;
    }

    /**
     * What a pop that carried acks answered: one result per shard popped, how many carried members it settled, and
     * the carried acks it could not settle (a key of the wrong type), each with Redis's error: the caller acks those
     * alone, to count and log the failure with its shard.
     */
    public record CarriedPop(List<PopResult> results, long settled, List<Ack> failed, List<String> errors) {}

    /**
     * Pops the shards (as {@link #pop(BusinessSpec, int, boolean, int)} for one, {@link #popMany} for several) in one
     * pop.lua call that first settles {@code carried} exactly as {@link #ackMany} would (pop.lua's carried ack
     * sections): the acks of earlier rounds ride on this round's pop instead of an ack.lua call of their own.
     * Standalone Redis only ({@link #combinesShards()}); without acks it is the plain pop. A call that fails may have
     * settled some of the acks (the caller acks them alone: settling twice changes nothing).
     */
    public CarriedPop popCarrying(BusinessSpec spec, int[] shards, boolean[] knownDue, int limit, List<Ack> carried) {
        return popCarrying(spec, shards, knownDue, limit, carried, 0);
    }

    /**
     * Like {@link #popCarrying(BusinessSpec, int[], boolean[], int, List)}, with pop.lua's lead ({@code leadMs}: the
     * schedules due within it of the pop's Redis time are taken too; 0: none).
     */
    public CarriedPop popCarrying(
            BusinessSpec spec, int[] shards, boolean[] knownDue, int limit, List<Ack> carried, long leadMs) {
        if (carried.isEmpty()) {
            List<PopResult> results;
            if (leadMs > 0) {
                results = shards.length == 1
                        ? List.of(pop(spec, shards[0], knownDue[0], limit, leadMs))
                        : popMany(spec, shards, knownDue, leadMs);
            } else {
                results = shards.length == 1
                        ? List.of(pop(spec, shards[0], knownDue[0], limit))
                        : popMany(spec, shards, knownDue);
            }
            return new CarriedPop(results, 0, List.of(), List.of());
        }
        DelayQueueKeys keys = spec.keys();
        String token = tokenPrefix + tokens.incrementAndGet();
        List<byte[]> keyList = new ArrayList<>(carried.size() * ACK_KEYS.length + shards.length * POP_KEYS.length);
        for (Ack a : carried) {
            keyList.addAll(keys.shardKeyBytes(a.shard(), ACK_KEYS));
        }
        byte[] flags = new byte[shards.length];
        for (int i = 0; i < shards.length; i++) {
            keyList.addAll(keys.shardKeyBytes(shards[i], POP_KEYS));
            flags[i] = knownDue[i] ? (byte) '1' : (byte) '0';
        }
        int batch = shards.length == 1
                ? Math.min(limit, spec.batch().size())
                : spec.batch().size();
        List<Object> args = new ArrayList<>(Arrays.asList(popArgs(spec, batch, token, flags)));
        args.add(num(carried.size()));
        addAckSections(args, carried);
        if (leadMs > 0) {
            args.add(num(leadMs));
        }
        List<?> reply;
        try {
            reply = redis.execute(POP, keyList, args.toArray());
        } catch (RuntimeException e) {
            noticeCrossSlot(e);
            throw e;
        }
        List<?> errors = (List<?>) reply.get(1);
        List<Ack> failed = new ArrayList<>(errors.size() / 2);
        List<String> messages = new ArrayList<>(errors.size() / 2);
        for (int i = 0; i + 1 < errors.size(); i += 2) {
            failed.add(carried.get((int) asLong(errors.get(i)) - 1));
            messages.add(text((byte[]) errors.get(i + 1)));
        }
        List<PopResult> results = parsePops((List<?>) reply.get(2), shards.length, token);
        return new CarriedPop(results, asLong(reply.get(0)), failed, messages);
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

    /**
     * pop.lua's arguments without ack sections, with the lead after them (ARGV[9] = '0' sections, ARGV[10] = lead);
     * no lead: exactly {@code args}.
     */
    private static Object[] withLead(Object[] args, long leadMs) {
        if (leadMs <= 0) {
            return args;
        }
        Object[] with = Arrays.copyOf(args, args.length + 2);
        with[args.length] = num(0);
        with[args.length + 1] = num(leadMs);
        return with;
    }

    private Object[] popArgs(BusinessSpec spec, int limit, String token, byte[] knownFlags) {
        return new Object[] {
            num(limit),
            num(spec.timing().lease().toMillis()),
            bytes(token),
            num(BLOCKED_RECHECK_MS),
            num(spec.batch().bytes()),
            knownFlags,
            spec.late().maxLateness() == null
                    ? NO_LIMIT
                    : num(spec.late().maxLateness().toMillis()),
            spec.late().drop() ? DROP : DEAD
        };
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

    /** What {@link #chargeRate} got: tokens granted, ms until a chunk is there again, whole tokens left. */
    public record RateCharge(int granted, long waitMs, long left) {}

    /**
     * Charges the business's fleet-wide rate bucket ({@code K:rate}, rate.lua): gives back {@code giveBack} unused
     * tokens, then takes up to {@code want} if at least {@code min(want, chunk)} are there.
     */
    public RateCharge chargeRate(DelayQueueKeys keys, int rate, long burst, int want, long chunk, long giveBack) {
        List<?> reply = redis.execute(
                RATE, List.of(bytes(keys.rate())), num(rate), num(burst), num(want), num(chunk), num(giveBack));
        return new RateCharge((int) asLong(reply.get(0)), asLong(reply.get(1)), asLong(reply.get(2)));
    }

    /**
     * Forgets confirmed members leased under {@code token}. A member whose lease was taken back (expired) or leased
     * again since is left alone. Returns how many were settled.
     */
    public long ack(BusinessSpec spec, int shard, String token, List<byte[]> members) {
        return ack(spec, shard, token, members, true);
    }

    /**
     * Like {@link #ack(BusinessSpec, int, String, List)}; {@code anyPayload} false says none of the members had a
     * payload when popped, so the script skips the payload bookkeeping when the shard's payload hash does not exist.
     */
    public long ack(BusinessSpec spec, int shard, String token, List<byte[]> members, boolean anyPayload) {
        if (members.isEmpty()) {
            return 0;
        }
        Object[] args = new Object[2 + members.size()];
        args[0] = bytes(token);
        args[1] = anyPayload ? YES : NO;
        for (int i = 0; i < members.size(); i++) {
            args[2 + i] = members.get(i);
        }
        Long acked = redis.execute(ACK, spec.keys().shardKeyBytes(shard, ACK_KEYS), args);
        return acked == null ? 0 : acked;
    }

    /** Confirmed members of one shard leased under {@code token}, to settle ({@link #ackMany}). */
    public record Ack(int shard, String token, List<byte[]> members, boolean anyPayload) {}

    /**
     * Settles the acks of several shards in one call of ack.lua (see its header), each only its members still leased
     * under its token; standalone Redis only ({@link #combinesShards()}). A call that fails (a shard's keys hold the
     * wrong type) may have settled the shards before the bad one: the caller acks them one by one, which settles
     * the rest and changes nothing for those already settled. Returns how many were settled.
     */
    public long ackMany(BusinessSpec spec, List<Ack> acks) {
        if (acks.size() == 1) {
            Ack only = acks.get(0);
            return ack(spec, only.shard(), only.token(), only.members(), only.anyPayload());
        }
        DelayQueueKeys keys = spec.keys();
        List<byte[]> keyList = new ArrayList<>(acks.size() * ACK_KEYS.length);
        List<Object> args = new ArrayList<>();
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

    /**
     * A renewed seat in the fleet's division of a business's shards: {@code rank} (0-based) among {@code of} live
     * seats, {@code seat} the number drawn from {@code K:cursor}, {@code dropped} expired seats removed now.
     */
    record Seat(long seat, int rank, int of, int dropped) {}

    /**
     * Renews {@code holder}'s seat for {@code ttlMs} (drawing one with {@code INCR K:cursor} when it has none or it
     * expired) and drops expired seats: {@code seat.lua}, one slot ({@code K:cursor}'s).
     */
    public Seat takeSeat(DelayQueueKeys keys, String holder, long ttlMs) {
        List<?> reply = redis.execute(SEAT, seatKeys(keys), bytes(holder), num(ttlMs), bytes("renew"));
        return new Seat(asLong(reply.get(2)), (int) asLong(reply.get(0)), (int) asLong(reply.get(1)), (int)
                asLong(reply.get(4)));
    }

    /** Gives {@code holder}'s seat up: the other instances divide the shards without it at their next renewal. */
    public void leaveSeat(DelayQueueKeys keys, String holder) {
        redis.execute(SEAT, seatKeys(keys), bytes(holder), num(0), bytes("leave"));
    }

    /**
     * Tells the fleet on {@code K:wake} that {@code shard} holds an entry due at {@code dueMs} ({@code <shard>:<ms>},
     * as producers do): a retry put back for a shard this instance no longer pops reaches its current owner.
     */
    public void announceToFleet(DelayQueueKeys keys, int shard, long dueMs) {
        redis.execute((RedisCallback<Long>) c -> c.publish(bytes(keys.wake()), bytes(shard + ":" + dueMs)));
    }

    private static List<byte[]> seatKeys(DelayQueueKeys keys) {
        return List.of(bytes(keys.cursor()), bytes(keys.seats()));
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

    /**
     * Records the business's shard count in {@code K:meta} unless a configuration with a higher topology version
     * ({@code relay.topology-version}) recorded its own; a different earlier count joins the draining list. Returns
     * what {@code K:meta} says now.
     */
    public Reshard reshard(BusinessSpec spec, long topologyVersion) {
        return reshard(spec, topologyVersion, 0);
    }

    /**
     * Like {@link #reshard(BusinessSpec, long)}; when {@code K:meta} records no shard count (never written, or
     * lost), producers have been hashing into their fallback count {@code producersFallback}: a larger one is
     * drained like an earlier count (0: none).
     */
    public Reshard reshard(BusinessSpec spec, long topologyVersion, int producersFallback) {
        List<?> reply = redis.execute(
                RESHARD, keys(spec.keys().meta()), num(spec.shards()), num(topologyVersion), num(producersFallback));
        return new Reshard(asLong(reply.get(0)) == 1, (int) asLong(reply.get(1)), ShardTopology.parseList(text((byte[])
                reply.get(2))));
    }

    /**
     * What a reshard left in {@code K:meta}.
     *
     * @param applied  false when a configuration with a higher topology version owns the shard count
     * @param shards   the shard count in force
     * @param draining earlier shard counts still drained
     */
    public record Reshard(boolean applied, int shards, int[] draining) {

        /** The shard counts {@code K:meta} records: the one in force, then those still draining. */
        public int[] recorded() {
            return IntStream.concat(IntStream.of(shards), Arrays.stream(draining))
                    .toArray();
        }

        /** Shards an instance configured with {@code ownShards} scans: the largest of it and every recorded count. */
        public int scanWidth(int ownShards) {
            int width = Math.max(ownShards, shards);
            for (int m : draining) {
                width = Math.max(width, m);
            }
            return width;
        }
    }

    /**
     * The shard counts {@code K:meta} records: the one in force ({@code fallbackShards} when none is recorded
     * yet) and those still draining.
     */
    public ShardTopology topology(DelayQueueKeys keys, int fallbackShards) {
        ShardTopology recorded = recordedTopology(keys);
        return recorded != null ? recorded : ShardTopology.of(fallbackShards);
    }

    /** The shard counts {@code K:meta} records, or null when it records no shard count (never written, or lost). */
    public ShardTopology recordedTopology(DelayQueueKeys keys) {
        List<Object> values = redis.opsForHash()
                .multiGet(bytes(keys.meta()), List.of(bytes(MetaFields.SHARDS), bytes(MetaFields.DRAINING)));
        int[] shards = ShardTopology.parseList(text((byte[]) values.get(0)));
        if (shards.length != 1) {
            return null;
        }
        return new ShardTopology(shards[0], ShardTopology.parseList(text((byte[]) values.get(1))), null);
    }

    /**
     * Removes drained shard counts from {@code K:meta}, provided the count in force is still {@code shards} (the
     * one the emptiness checks were made against); returns those still draining.
     */
    public int[] undrain(DelayQueueKeys keys, int shards, int[] drained) {
        Object[] args = new Object[drained.length + 1];
        args[0] = num(shards);
        for (int i = 0; i < drained.length; i++) {
            args[i + 1] = num(drained[i]);
        }
        byte[] rest = redis.execute(UNDRAIN, keys(keys.meta()), args);
        return ShardTopology.parseList(text(rest));
    }

    /**
     * Whether a shard holds anything at all: scheduled, in flight or waiting for a retry, dead, or a cold block (read
     * atomically, so an entry a promotion moves from the cold tier to {@code K:i} is seen on one side). A shard count
     * is retired only once all of its extra shards hold nothing: a retired shard's cold entries would never come back.
     */
    public boolean holdsAnything(DelayQueueKeys keys, int shard) {
        byte[][] all = keys.shardKeyBytes(shard);
        Long size = redis.execute(
                SHARD_SIZE,
                List.of(
                        all[DelayQueueKeys.SHARD],
                        all[DelayQueueKeys.INFLIGHT],
                        all[DelayQueueKeys.DEAD],
                        DelayQueueKeys.bytes(keys.cold(shard))));
        return size != null && size > 0;
    }

    /** Entries a shard still holds, scheduled plus in flight or waiting for a retry (read atomically). */
    public long shardSize(DelayQueueKeys keys, int shard) {
        Long size = redis.execute(SHARD_SIZE, keys.shardKeyBytes(shard, DelayQueueKeys.SHARD, DelayQueueKeys.INFLIGHT));
        return size == null ? 0 : size;
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

    @SuppressWarnings("rawtypes")
    private static RedisScript<List> script(String name) {
        return lua(name, List.class);
    }

    private static <T> RedisScript<T> lua(String name, Class<T> type) {
        return LuaScripts.load("io/delayrelay/app/lua/" + name + ".lua", type);
    }
}
