package io.delayrelay.app.schedule;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RecurringSchedule;
import io.delayrelay.api.internal.LuaScripts;
import org.springframework.data.redis.connection.RedisZSetCommands;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * The Redis side of recurring schedules: {@code {K:0}:schedules} (name to next tick) and {@code {K:0}:schedule-state}
 * (every schedule's state, field {@code <name>:<field>}), both in shard 0's Redis Cluster slot, where the slot entries
 * go. Every write that decides a slot is one script, conditional on the schedule's cursor. All schedules' state in one
 * hash lets a claim or a batch of tends read and write it with one command, whatever the batch's size.
 */
public class ScheduleStore {

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> CLAIM =
            LuaScripts.load("io/delayrelay/app/lua/schedule-claim.lua", List.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> WRITE =
            LuaScripts.load("io/delayrelay/app/lua/schedule-write.lua", List.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> WITHDRAW =
            LuaScripts.load("io/delayrelay/app/lua/schedule-withdraw.lua", List.class);

    private static final RedisScript<Long> DEFINE =
            LuaScripts.load("io/delayrelay/api/internal/schedule-define.lua", Long.class);

    private static final RedisScript<Long> REQUEST =
            LuaScripts.load("io/delayrelay/api/internal/schedule-request.lua", Long.class);

    /** The counts the write script adds to (the rest of the state is set). */
    static final String SKIPPED = "skipped.";

    /**
     * Every field a schedule's state may have (docs/redis-contract.md): what a claim and a view read, and what a delete
     * removes. The relay's fields, the operator's requests, and a runtime schedule's definition.
     */
    static final List<String> FIELDS;

    static {
        List<String> fields = new ArrayList<>(List.of(
                "cursor",
                "pending",
                "prev",
                "last",
                "before-last",
                "written",
                "extra",
                "fp",
                "held",
                "origin",
                "created-at",
                "created-by",
                "paused-by",
                "delete-requested"));
        for (String reason :
                List.of(SlotPlanner.PAUSED, SlotPlanner.CATCH_UP, SlotPlanner.CATCH_UP_LIMIT, SlotPlanner.DST_GAP)) {
            fields.add(SKIPPED + reason);
        }
        fields.addAll(RecurringSchedule.DEF_FIELDS);
        FIELDS = List.copyOf(fields);
    }

    private final RedisTemplate<byte[], byte[]> redis;

    public ScheduleStore(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /** A schedule claimed for a tend: its state (the fields set), and when it was due to be tended (epoch ms). */
    record Claimed(String name, Map<String, String> state, long tickMs) {}

    /** What a claim returned: Redis time, the business's next tick after it (-1: no schedule), the claimed ones. */
    record Claim(long nowMs, long nextTickMs, List<Claimed> claimed) {}

    /** Claims up to {@code limit} schedules of the business due to be tended, for {@code leaseMs}. */
    Claim claim(DelayQueueKeys keys, long leaseMs, int limit) {
        List<byte[]> args = new ArrayList<>();
        args.add(num(leaseMs));
        args.add(num(limit));
        FIELDS.forEach(f -> args.add(bytes(f)));
        List<?> reply = redis.execute(CLAIM, stateKeys(keys), args.toArray(new Object[0]));
        List<Claimed> claimed = new ArrayList<>();
        for (int i = 2; i + 2 < reply.size(); i += 3) {
            claimed.add(new Claimed(text(reply.get(i)), state((List<?>) reply.get(i + 1)), asLong(reply.get(i + 2))));
        }
        return new Claim(asLong(reply.get(0)), asLong(reply.get(1)), claimed);
    }

    /** A slot entry to write: due time, entry id (also its message id), stamped payload. */
    record Entry(long dueMs, String id, byte[] payload) {}

    /**
     * One schedule's part of a batch write: applied only if its cursor is still {@code expected} ('' for a schedule not
     * tended before; '*' for an extra message, which leaves cursor, pending and tick alone).
     *
     * @param runtime  the schedule must still be a runtime-created one (not deleted meanwhile)
     * @param plan     cursor, pending, prev and next tick to set
     * @param fields   state fields to set ('' deletes)
     * @param counters state counters to add
     * @param entries  the slot entries to write
     */
    record Tend(
            String name,
            String expected,
            boolean runtime,
            SlotPlan plan,
            Map<String, String> fields,
            Map<String, Long> counters,
            List<Entry> entries) {}

    /**
     * Writes the tends of a batch of the business's schedules in one script call.
     *
     * @return per tend, whether it was written (false: another instance tended it meanwhile, or it was deleted)
     */
    boolean[] write(DelayQueueKeys keys, List<Tend> tends) {
        List<byte[]> args = new ArrayList<>();
        args.add(bytes(keys.wake()));
        args.add(num(tends.size()));
        for (Tend t : tends) {
            SlotPlan plan = t.plan();
            args.add(bytes(t.name()));
            args.add(bytes(t.expected()));
            args.add(bytes(t.runtime() ? "runtime" : ""));
            args.add(num(plan.cursor()));
            args.add(bytes(plan.pendingId()));
            args.add(bytes(plan.prev()));
            args.add(bytes(plan.nextTickMs() == SlotPlan.NEVER ? "inf" : Long.toString(plan.nextTickMs())));
            args.add(num(t.fields().size()));
            t.fields().forEach((k, v) -> {
                args.add(bytes(k));
                args.add(bytes(v));
            });
            args.add(num(t.counters().size()));
            t.counters().forEach((k, v) -> {
                args.add(bytes(k));
                args.add(num(v));
            });
            args.add(num(t.entries().size()));
            for (Entry e : t.entries()) {
                args.add(num(e.dueMs()));
                args.add(bytes(e.id()));
                args.add(e.payload());
            }
        }
        List<?> reply = redis.execute(
                WRITE,
                List.of(
                        bytes(keys.schedules()),
                        bytes(keys.scheduleState()),
                        bytes(keys.shard(0)),
                        bytes(keys.payloads(0))),
                args.toArray(new Object[0]));
        boolean[] written = new boolean[tends.size()];
        for (int i = 0; i < written.length; i++) {
            written[i] = asLong(reply.get(i)) == 1;
        }
        return written;
    }

    /** Writes one extra slot entry (trigger now): no cursor check, the cursor stays. */
    void writeExtra(DelayQueueKeys keys, String name, long dueMs, String id, byte[] payload) {
        SlotPlan none = new SlotPlan(0, "", "", List.of(), Map.of(), SlotPlan.NEVER, false);
        write(
                keys,
                List.of(new Tend(
                        name,
                        "*",
                        false,
                        none,
                        Map.of(),
                        Map.of("extra", 1L),
                        List.of(new Entry(dueMs, id, payload)))));
    }

    /**
     * What a withdrawal did.
     *
     * @param applied   false when the cursor moved meanwhile (nothing done)
     * @param withdrawn the pending entry was taken back before any delivery
     * @param cursor    the cursor now ('' none)
     */
    record Withdrawal(boolean applied, boolean withdrawn, String cursor) {}

    /** Withdraws the pending entry (if not popped and never tried) and moves the cursor back before it. */
    Withdrawal withdraw(DelayQueueKeys keys, String name, String expected, long nextTickMs) {
        return withdrawal(keys, name, expected, "revert", nextTickMs);
    }

    /** Deletes the schedule: its state, its tick, and its pending entry if not popped yet. */
    Withdrawal delete(DelayQueueKeys keys, String name) {
        return withdrawal(keys, name, "", "delete", 0);
    }

    private Withdrawal withdrawal(DelayQueueKeys keys, String name, String expected, String mode, long tickMs) {
        List<byte[]> withdrawKeys = List.of(
                bytes(keys.schedules()),
                bytes(keys.scheduleState()),
                bytes(keys.shard(0)),
                bytes(keys.payloads(0)),
                bytes(keys.attempts(0)));
        List<byte[]> args = new ArrayList<>(List.of(bytes(name), bytes(expected), bytes(mode), num(tickMs)));
        if (mode.equals("delete")) {
            FIELDS.forEach(f -> args.add(bytes(f)));
        }
        List<?> reply = redis.execute(WITHDRAW, withdrawKeys, args.toArray(new Object[0]));
        if (asLong(reply.get(0)) != 1) {
            return new Withdrawal(false, false, text(reply.get(1)));
        }
        return new Withdrawal(true, asLong(reply.get(1)) == 1, text(reply.get(2)));
    }

    /** Lists a schedule for tending ({@code ZADD}); {@code now} brings its tick forward, else only if absent (NX). */
    void register(DelayQueueKeys keys, String name, boolean now) {
        byte[] key = bytes(keys.schedules());
        redis.execute((RedisCallback<Object>) c -> now
                ? c.zSetCommands().zAdd(key, 0, bytes(name))
                : c.zSetCommands().zAdd(key, 0, bytes(name), RedisZSetCommands.ZAddArgs.ifNotExists()));
    }

    /**
     * An operator's request ({@code schedule-request.lua}): sets ('' removes) a state field of an existing schedule
     * and brings its tick forward. False when there is no such schedule.
     */
    boolean request(DelayQueueKeys keys, String name, String field, String value) {
        Long done = redis.execute(REQUEST, stateKeys(keys), bytes(name), bytes(field), bytes(value), bytes(""));
        return done != null && done == 1;
    }

    /** Creates or replaces a runtime schedule's definition; false when the name is a configured schedule's. */
    boolean define(DelayQueueKeys keys, String name, Map<String, String> defFields) {
        List<byte[]> args = new ArrayList<>();
        args.add(bytes(name));
        args.add(num(RecurringSchedule.DEF_FIELDS.size()));
        RecurringSchedule.DEF_FIELDS.forEach(f -> args.add(bytes(f)));
        defFields.forEach((k, v) -> {
            args.add(bytes(k));
            args.add(bytes(v));
        });
        Long done = redis.execute(DEFINE, stateKeys(keys), args.toArray(new Object[0]));
        return done != null && done == 1;
    }

    /** Whether the business has any schedule listed for tending (one EXISTS). */
    boolean hasSchedules(DelayQueueKeys keys) {
        byte[] key = bytes(keys.schedules());
        Boolean exists =
                redis.execute((RedisCallback<Boolean>) c -> c.keyCommands().exists(key));
        return Boolean.TRUE.equals(exists);
    }

    /** The business's schedules with their next tick (ms; {@link SlotPlan#NEVER} for none), in name order. */
    Map<String, Long> ticks(DelayQueueKeys keys) {
        Map<String, Long> ticks = new java.util.TreeMap<>();
        var tuples = redis.opsForZSet().rangeWithScores(bytes(keys.schedules()), 0, -1);
        if (tuples != null) {
            tuples.forEach(t -> ticks.put(
                    text(t.getValue()),
                    Double.isInfinite(t.getScore())
                            ? SlotPlan.NEVER
                            : t.getScore().longValue()));
        }
        return ticks;
    }

    /** A schedule's state: its fields that are set (empty when none). */
    Map<String, String> state(DelayQueueKeys keys, String name) {
        byte[] key = bytes(keys.scheduleState());
        byte[][] fields = FIELDS.stream().map(f -> bytes(name + ":" + f)).toArray(byte[][]::new);
        List<byte[]> raw = redis.execute(
                (RedisCallback<List<byte[]>>) c -> c.hashCommands().hMGet(key, fields));
        return state(raw == null ? List.of() : raw);
    }

    /** Whether the entry is still queued in shard 0 (not popped), and where it is otherwise. */
    String whereIs(DelayQueueKeys keys, String id) {
        byte[] member = bytes(id);
        if (redis.opsForZSet().score(bytes(keys.shard(0)), member) != null) {
            return "scheduled";
        }
        if (redis.opsForZSet().score(bytes(keys.inflight(0)), member) != null) {
            return "in-flight";
        }
        if (redis.opsForZSet().score(bytes(keys.dead(0)), member) != null) {
            return "dead";
        }
        return "relayed";
    }

    private static List<byte[]> stateKeys(DelayQueueKeys keys) {
        return List.of(bytes(keys.schedules()), bytes(keys.scheduleState()));
    }

    /** A state from its values in {@link #FIELDS}' order: the fields set ('' or null is not set). */
    private static Map<String, String> state(List<?> values) {
        Map<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < values.size() && i < FIELDS.size(); i++) {
            String value = text(values.get(i));
            if (!value.isEmpty()) {
                map.put(FIELDS.get(i), value);
            }
        }
        return map;
    }

    private static String text(Object value) {
        if (value == null) {
            return "";
        }
        return value instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : value.toString();
    }

    private static long asLong(Object value) {
        return value instanceof Number n ? n.longValue() : Long.parseLong(text(value));
    }

    private static byte[] num(long value) {
        return bytes(Long.toString(value));
    }
}
