package io.delayrelay.app.engine.cold;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

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

    /**
     * Entries per script call of a demotion or promotion: a block (up to {@link ColdMover#BLOCK_MAX} entries) is moved
     * in slices of this many, each one atomic script, so that no call holds Redis (and every pop behind it) for more
     * than ~1-2 ms (docs/design/cold-tier-choice.md has the measured trade-off).
     */
    public static final int SLICE = 250;

    /** Entries listed per {@code cold-pick.lua} call (the listing is the longest script per entry: no hashing saved). */
    public static final int PICK_PAGE = 500;

    private final RedisTemplate<byte[], byte[]> redis;

    private final int sliceMax;

    /**
     * What a block keeps of a payload: a compressed intake envelope is expanded first, so that the block compresses
     * it with the others (it goes back hot as an envelope).
     */
    public interface PayloadExpansion {
        /** The payload to keep in a block; throws {@link IllegalArgumentException} when it cannot be expanded. */
        byte[] expand(DelayQueueKeys keys, byte[] payload);
    }

    private final PayloadExpansion expansion;

    public ColdStore(RedisTemplate<byte[], byte[]> redis) {
        this(redis, SLICE, (keys, payload) -> payload);
    }

    /** Blocks keep payloads as {@code expansion} makes them. */
    public ColdStore(RedisTemplate<byte[], byte[]> redis, PayloadExpansion expansion) {
        this(redis, SLICE, expansion);
    }

    /** With slices of {@code sliceMax} entries (tests cut blocks into tiny slices). */
    public ColdStore(RedisTemplate<byte[], byte[]> redis, int sliceMax) {
        this(redis, sliceMax, (keys, payload) -> payload);
    }

    private ColdStore(RedisTemplate<byte[], byte[]> redis, int sliceMax, PayloadExpansion expansion) {
        this.redis = redis;
        this.sliceMax = sliceMax;
        this.expansion = expansion;
    }

    /** Entries of a shard listed for demotion, and the Redis time they were listed at. */
    public record Pick(long nowMs, List<ColdBlock.Entry> entries) {}

    /**
     * Up to {@code limit} entries of the shard due later than Redis time + {@code coldAfterMs}, earliest first, listed
     * in calls of at most {@link #PICK_PAGE} entries (each page from where the previous one ended; a member listed
     * twice, the range having changed between two pages, is kept once). The time is the first call's.
     */
    public Pick pick(DelayQueueKeys keys, int shard, long coldAfterMs, int limit) {
        List<byte[]> keyList = keys(keys.shard(shard), keys.payloads(shard), keys.inflight(shard), keys.dead(shard));
        long now = -1;
        long offset = 0;
        List<ColdBlock.Entry> entries = new ArrayList<>(limit);
        Set<ByteBuffer> seen = new HashSet<>();
        while (entries.size() < limit) {
            int want = Math.min(PICK_PAGE, limit - entries.size());
            List<?> reply = redis.execute(PICK, keyList, num(coldAfterMs), num(want), num(offset));
            if (now < 0) {
                now = asLong(reply.get(0));
            }
            int n = (int) asLong(reply.get(1));
            for (int i = 0, at = 3; i < n; i++, at += 3) {
                byte[] member = (byte[]) reply.get(at);
                if (seen.add(ByteBuffer.wrap(member))) {
                    long due = parseLong((byte[]) reply.get(at + 1));
                    entries.add(new ColdBlock.Entry(member, due, (byte[]) reply.get(at + 2)));
                }
            }
            offset = asLong(reply.get(2));
            if (offset < 0 || n == 0) {
                break;
            }
        }
        return new Pick(now, entries);
    }

    /** Result of a demotion: entries moved into the block (0: none, no block written) and the block's id. */
    public record Demoted(int moved, long blockId) {}

    /**
     * The fan-out of the shard's member index: the recorded one, or (before the tier starts) one for its size now:
     * a power of two near size / {@link #PER_PART}, between {@link #MIN_FAN} and {@link #MAX_FAN}.
     */
    public int fanOut(DelayQueueKeys keys, int shard) {
        Object recorded = redis.opsForHash().get(bytes(keys.coldMeta(shard)), bytes("fan"));
        if (recorded instanceof byte[] b) {
            // "2:<fan-out>" (index rule 2), or "<fan-out>" for a tier started under rule 1
            String text = new String(b, java.nio.charset.StandardCharsets.US_ASCII);
            return Integer.parseInt(text.substring(text.indexOf(':') + 1));
        }
        Long size = redis.opsForZSet().zCard(bytes(keys.shard(shard)));
        long wanted = (size == null ? 0 : size) / PER_PART;
        int fan = MIN_FAN;
        while (fan < wanted && fan < MAX_FAN) {
            fan *= 2;
        }
        return fan;
    }

    /**
     * Stores {@code entries} as one block and moves those still unchanged out of the hot shard: each slice of at most
     * {@link #SLICE} (or the constructor's) entries atomically (docs/cold-tier.md).
     */
    public Demoted demote(DelayQueueKeys keys, int shard, List<ColdBlock.Entry> entries) {
        return demote(keys, shard, entries, fanOut(keys, shard));
    }

    /**
     * Like {@link #demote(DelayQueueKeys, int, List)} with the fan-out used when none is recorded yet. The member
     * index parts are computed here ({@code ColdSlice.part}); a shard whose recorded fan-out differs (another instance's first
     * demotion chose another) answers with it and the parts are computed again.
     */
    public Demoted demote(DelayQueueKeys keys, int shard, List<ColdBlock.Entry> entries, int fan) {
        return demote(keys, shard, entries, fan, Integer.MAX_VALUE);
    }

    /**
     * Like {@link #demote(DelayQueueKeys, int, List, int)}, but stops after {@code calls} script calls: a relay killed
     * between two slices of a block (tests).
     */
    public Demoted demote(DelayQueueKeys keys, int shard, List<ColdBlock.Entry> entries, int fan, int calls) {
        int left = calls;
        List<ColdBlock.Entry> distinct = ColdSlice.distinctDigests(entries);
        byte[] block = ColdBlock.encode(expanded(keys, distinct));
        List<byte[]> keyList = keys(
                keys.shard(shard),
                keys.payloads(shard),
                keys.inflight(shard),
                keys.dead(shard),
                keys.cold(shard),
                keys.coldBlocks(shard),
                keys.coldMeta(shard));
        int fanNow = fan;
        long blockId = 0;
        int moved = 0;
        List<ColdBlock.Entry> pending = distinct;
        int attempts = 0;
        while (!pending.isEmpty()) {
            ColdSlice grouped = ColdSlice.of(pending, fanNow);
            int done = 0;
            boolean again = false;
            for (ColdSlice slice : grouped.slices(sliceMax)) {
                Object[] args = slice.args(new byte[][] {
                    num(fanNow), blockId == 0 ? block : new byte[0], blockId == 0 ? new byte[0] : num(blockId)
                });
                if (left-- == 0) {
                    return new Demoted(moved, moved == 0 ? 0 : blockId);
                }
                List<?> reply = redis.execute(DEMOTE, keyList, args);
                long first = asLong(reply.get(0));
                if (first < 0) {
                    if (++attempts > 3) {
                        throw new IllegalStateException(
                                "cold-demote: the fan-out of shard " + shard + " keeps changing");
                    }
                    fanNow = (int) asLong(reply.get(1));
                    again = true;
                    break;
                }
                moved += (int) first;
                if (first > 0) {
                    blockId = asLong(reply.get(1));
                }
                done += slice.size();
            }
            pending = again ? grouped.entries.subList(done, grouped.entries.size()) : List.of();
        }
        return new Demoted(moved, moved == 0 ? 0 : blockId);
    }

    /**
     * The entries as the block keeps them: payloads expanded. One that cannot be expanded is kept as it is (it goes
     * back hot unchanged, and is dead-lettered with its reason when due, as it would have been).
     */
    private List<ColdBlock.Entry> expanded(DelayQueueKeys keys, List<ColdBlock.Entry> entries) {
        List<ColdBlock.Entry> out = new ArrayList<>(entries.size());
        for (ColdBlock.Entry e : entries) {
            byte[] payload = e.payload();
            if (payload != null) {
                try {
                    payload = expansion.expand(keys, payload);
                } catch (IllegalArgumentException unreadable) {
                    payload = e.payload();
                }
            }
            out.add(payload == e.payload() ? e : new ColdBlock.Entry(e.member(), e.dueMs(), payload));
        }
        return out;
    }

    /** A cold block due for promotion, and the member index fan-out its shard records. */
    public record DueBlock(String id, byte[] block, int fan) {}

    /** Up to {@code limit} blocks whose earliest entry is due before Redis time + {@code leadMs}, earliest first. */
    public List<DueBlock> due(DelayQueueKeys keys, int shard, long leadMs, int limit) {
        List<?> reply = redis.execute(
                DUE, keys(keys.cold(shard), keys.coldBlocks(shard), keys.coldMeta(shard)), num(leadMs), num(limit));
        int fan = (int) asLong(reply.get(1));
        List<DueBlock> blocks = new ArrayList<>();
        for (int i = 2; i + 1 < reply.size(); i += 2) {
            blocks.add(new DueBlock(new String((byte[]) reply.get(i)), (byte[]) reply.get(i + 1), fan));
        }
        return blocks;
    }

    /** Result of a promotion: entries back in the hot shard, entries skipped (cancelled or scheduled again). */
    public record Promoted(int back, int skipped, boolean gone) {}

    /**
     * Brings a block's live entries back into the hot shard and deletes the block: each slice of at most
     * {@link #SLICE} (or the constructor's) entries atomically, the block deleted by the last (docs/cold-tier.md).
     */
    public Promoted promote(DelayQueueKeys keys, int shard, DueBlock block) {
        return promote(keys, shard, block, Integer.MAX_VALUE);
    }

    /**
     * Like {@link #promote(DelayQueueKeys, int, DueBlock)}, but stops after {@code calls} script calls: a relay killed
     * between two slices of a block (tests).
     */
    public Promoted promote(DelayQueueKeys keys, int shard, DueBlock block, int calls) {
        int left = calls;
        List<ColdBlock.Entry> entries = ColdBlock.decode(block.block());
        List<byte[]> keyList = keys(
                keys.shard(shard),
                keys.payloads(shard),
                keys.cold(shard),
                keys.coldBlocks(shard),
                keys.coldMeta(shard));
        byte[] id = bytes(block.id());
        byte[] wake = bytes(keys.wake());
        byte[] shardArg = num(shard);
        int fanNow = block.fan();
        int back = 0;
        int skipped = 0;
        boolean started = false;
        List<ColdBlock.Entry> pending = entries;
        int attempts = 0;
        while (true) {
            ColdSlice grouped = ColdSlice.of(pending, Math.max(1, fanNow));
            List<ColdSlice> slices = grouped.slices(sliceMax);
            int done = 0;
            boolean again = false;
            for (int s = 0; s < slices.size(); s++) {
                ColdSlice slice = slices.get(s);
                if (left-- == 0) {
                    return new Promoted(back, skipped, false);
                }
                byte[] last = s == slices.size() - 1 ? new byte[] {'1'} : new byte[] {'0'};
                List<?> reply = redis.execute(
                        PROMOTE, keyList, slice.args(new byte[][] {id, wake, shardArg, num(fanNow), last}));
                long first = asLong(reply.get(0));
                if (first == -1) {
                    // gone: promoted by another instance (or by this one before)
                    return started ? new Promoted(back, skipped, false) : new Promoted(0, 0, true);
                }
                if (first == -2) {
                    if (++attempts > 3) {
                        throw new IllegalStateException(
                                "cold-promote: the fan-out of shard " + shard + " keeps changing");
                    }
                    fanNow = (int) asLong(reply.get(1));
                    again = true;
                    break;
                }
                started = true;
                back += (int) first;
                skipped += (int) asLong(reply.get(1));
                done += slice.size();
            }
            if (!again) {
                return new Promoted(back, skipped, false);
            }
            pending = grouped.entries.subList(done, grouped.entries.size());
        }
    }

    /** Live cold entries and blocks of a shard. */
    public record Count(long entries, long blocks) {}

    public Count count(DelayQueueKeys keys, int shard) {
        List<?> reply = redis.execute(COUNT, keys(keys.coldMeta(shard)));
        return new Count(asLong(reply.get(0)), asLong(reply.get(1)));
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
