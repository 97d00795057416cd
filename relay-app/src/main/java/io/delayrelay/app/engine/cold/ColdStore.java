package io.delayrelay.app.engine.cold;

import java.util.ArrayList;
import java.util.List;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * The cold tier's Redis operations on one shard, each one Lua script call on the shard's cluster slot: list entries
 * to demote, demote them into a block, list blocks due for promotion, promote a block, count what is cold.
 */
public class ColdStore {

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> PICK = LuaScripts.load(lua("cold-pick"), List.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> DEMOTE = LuaScripts.load(lua("cold-demote"), List.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> DUE = LuaScripts.load(lua("cold-due"), List.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> PROMOTE = LuaScripts.load(lua("cold-promote"), List.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> COUNT = LuaScripts.load(lua("cold-count"), List.class);

    /**
     * Bounds of the parts of a shard's cold member index, chosen by the first demotion from the shard's size (about
     * {@link #PER_PART} entries a part) and recorded in {@code {K:i}:cold-meta}: with Redis's default
     * {@code hash-max-listpack-entries} 512 each part stays a compact listpack up to 512 × the fan-out entries a shard
     * (docs/cold-tier.md).
     */
    public static final int MIN_FAN = 64;

    public static final int MAX_FAN = 4096;

    static final int PER_PART = 128;

    private final RedisTemplate<byte[], byte[]> redis;

    public ColdStore(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /** Entries of a shard listed for demotion, and the Redis time they were listed at. */
    public record Pick(long nowMs, List<ColdBlock.Entry> entries) {}

    /** Up to {@code limit} entries of the shard due later than Redis time + {@code coldAfterMs}, earliest first. */
    public Pick pick(DelayQueueKeys keys, int shard, long coldAfterMs, int limit) {
        List<?> reply = redis.execute(
                PICK,
                keys(keys.shard(shard), keys.payloads(shard), keys.inflight(shard), keys.dead(shard)),
                num(coldAfterMs),
                num(limit));
        long now = asLong(reply.get(0));
        int n = (int) asLong(reply.get(1));
        List<ColdBlock.Entry> entries = new ArrayList<>(n);
        for (int i = 0, at = 2; i < n; i++, at += 4) {
            byte[] member = (byte[]) reply.get(at);
            long due = parseLong((byte[]) reply.get(at + 1));
            boolean has = ((byte[]) reply.get(at + 3))[0] == '1';
            entries.add(new ColdBlock.Entry(member, due, has ? (byte[]) reply.get(at + 2) : null));
        }
        return new Pick(now, entries);
    }

    /** Result of a demotion: entries moved into the block (0: none, no block written) and the block's id. */
    public record Demoted(int moved, long blockId) {}

    /**
     * The fan-out of the shard's member index: the recorded one, or (before the first demotion) one for its size now:
     * a power of two near size / {@link #PER_PART}, between {@link #MIN_FAN} and {@link #MAX_FAN}.
     */
    public int fanOut(DelayQueueKeys keys, int shard) {
        Object recorded = redis.opsForHash().get(bytes(keys.coldMeta(shard)), bytes("fan"));
        if (recorded instanceof byte[] b) {
            return Integer.parseInt(new String(b));
        }
        Long size = redis.opsForZSet().zCard(bytes(keys.shard(shard)));
        long wanted = (size == null ? 0 : size) / PER_PART;
        int fan = MIN_FAN;
        while (fan < wanted && fan < MAX_FAN) {
            fan *= 2;
        }
        return fan;
    }

    /** Stores {@code entries} as one block and moves those still unchanged out of the hot shard, atomically. */
    public Demoted demote(DelayQueueKeys keys, int shard, List<ColdBlock.Entry> entries) {
        return demote(keys, shard, entries, fanOut(keys, shard));
    }

    /** Like {@link #demote(DelayQueueKeys, int, List)} with the fan-out used when none is recorded yet. */
    public Demoted demote(DelayQueueKeys keys, int shard, List<ColdBlock.Entry> entries, int fan) {
        byte[] block = ColdBlock.encode(entries);
        Object[] args = new Object[2 + 4 * entries.size()];
        args[0] = num(fan);
        args[1] = block;
        fill(args, 2, entries);
        List<?> reply = redis.execute(
                DEMOTE,
                keys(
                        keys.shard(shard),
                        keys.payloads(shard),
                        keys.inflight(shard),
                        keys.dead(shard),
                        keys.cold(shard),
                        keys.coldBlocks(shard),
                        keys.coldMeta(shard)),
                args);
        return new Demoted((int) asLong(reply.get(0)), asLong(reply.get(1)));
    }

    /** A cold block due for promotion. */
    public record DueBlock(String id, byte[] block) {}

    /** Up to {@code limit} blocks whose earliest entry is due before Redis time + {@code leadMs}, earliest first. */
    public List<DueBlock> due(DelayQueueKeys keys, int shard, long leadMs, int limit) {
        List<?> reply = redis.execute(DUE, keys(keys.cold(shard), keys.coldBlocks(shard)), num(leadMs), num(limit));
        List<DueBlock> blocks = new ArrayList<>();
        for (int i = 1; i + 1 < reply.size(); i += 2) {
            blocks.add(new DueBlock(new String((byte[]) reply.get(i)), (byte[]) reply.get(i + 1)));
        }
        return blocks;
    }

    /** Result of a promotion: entries back in the hot shard, entries skipped (cancelled or scheduled again). */
    public record Promoted(int back, int skipped, boolean gone) {}

    /** Brings a block's live entries back into the hot shard and deletes the block, atomically. */
    public Promoted promote(DelayQueueKeys keys, int shard, DueBlock block) {
        List<ColdBlock.Entry> entries = ColdBlock.decode(block.block());
        Object[] args = new Object[3 + 4 * entries.size()];
        args[0] = bytes(block.id());
        args[1] = bytes(keys.wake());
        args[2] = num(shard);
        fill(args, 3, entries);
        List<?> reply = redis.execute(
                PROMOTE,
                keys(
                        keys.shard(shard),
                        keys.payloads(shard),
                        keys.cold(shard),
                        keys.coldBlocks(shard),
                        keys.coldMeta(shard)),
                args);
        long back = asLong(reply.get(0));
        return back < 0 ? new Promoted(0, 0, true) : new Promoted((int) back, (int) asLong(reply.get(1)), false);
    }

    /** Live cold entries and blocks of a shard. */
    public record Count(long entries, long blocks) {}

    public Count count(DelayQueueKeys keys, int shard) {
        List<?> reply = redis.execute(COUNT, keys(keys.coldMeta(shard)));
        return new Count(asLong(reply.get(0)), asLong(reply.get(1)));
    }

    private static void fill(Object[] args, int from, List<ColdBlock.Entry> entries) {
        int at = from;
        for (ColdBlock.Entry e : entries) {
            args[at++] = e.member();
            args[at++] = num(e.dueMs());
            args[at++] = e.payload() == null ? new byte[0] : e.payload();
            args[at++] = e.payload() == null ? new byte[] {'0'} : new byte[] {'1'};
        }
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

    private static long asLong(Object value) {
        if (value instanceof byte[] b) {
            return parseLong(b);
        }
        return ((Number) value).longValue();
    }

    private static long parseLong(byte[] digits) {
        String text = new String(digits);
        return text.indexOf('.') >= 0 || text.indexOf('e') >= 0
                ? (long) Double.parseDouble(text)
                : Long.parseLong(text);
    }

    private static String lua(String name) {
        return "io/delayrelay/app/lua/" + name + ".lua";
    }
}
