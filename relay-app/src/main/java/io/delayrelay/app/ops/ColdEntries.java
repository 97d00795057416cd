package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.engine.cold.ColdBlock;
import io.delayrelay.app.ops.DeadLetters.Entry;
import io.delayrelay.app.trigger.BusinessSpec;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.zset.Tuple;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * An operator's view of a business's cold entries (docs/cold-tier.md): the earliest ones, and those whose member
 * starts with a prefix. A cold entry is read from its block (decompressed here, on demand) and is listed only while
 * the member index points at that block (the tier's liveness rule), at its rescheduled due time if it has one.
 *
 * <p>Blocks are read in the order of their score in {@code {K:i}:cold} (a lower bound of their live entries' due
 * times), and reading stops at the first block that cannot hold one of the {@code limit} earliest entries, or when
 * the {@link ListingBudget} is spent (a block counts as the entries it holds). Read block by block, not as a
 * snapshot: an entry the mover promotes meanwhile (back in its hot shard) may be missing from a listing that read the
 * hot shards first.
 */
final class ColdEntries {

    private static final Logger log = LoggerFactory.getLogger(ColdEntries.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> FIND = LuaScripts.load("io/delayrelay/app/lua/cold-find.lua", List.class);

    private static final Comparator<Cold> ORDER = Comparator.comparingLong(
                    (Cold c) -> c.entry().dueAtMs())
            .thenComparing(c -> c.entry().member());

    private final RedisTemplate<byte[], byte[]> redis;

    ColdEntries(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /** A live cold entry, with the message stored for its id ({@code null}: the member is the message). */
    record Cold(Entry entry, byte @Nullable [] payload) {}

    /**
     * The {@code limit} earliest cold entries over shards 0..shards-1 that can be among the {@code limit} earliest
     * of the business, given the due times {@code hotDues} of the earliest hot entries already listed.
     */
    ShardMerge.Found<Cold> first(
            BusinessSpec spec, int shards, int limit, Collection<Long> hotDues, ListingBudget budget) {
        PriorityQueue<Long> dues = new PriorityQueue<>(Comparator.reverseOrder());
        hotDues.forEach(d -> keep(dues, d, limit));
        double until = dues.size() < limit ? Double.POSITIVE_INFINITY : dues.peek();
        List<Block> blocks = new ArrayList<>();
        // the last score listed of each shard that may hold more blocks than it listed
        List<Double> cutAt = new ArrayList<>();
        for (int shard = 0; shard < shards; shard++) {
            byte[] key = bytes(spec.keys().cold(shard));
            Set<Tuple> page = redis.execute((RedisCallback<Set<Tuple>>)
                    c -> c.zSetCommands().zRangeByScoreWithScores(key, Double.NEGATIVE_INFINITY, until, 0, limit));
            if (page == null) {
                continue;
            }
            double last = Double.NEGATIVE_INFINITY;
            for (Tuple t : page) {
                blocks.add(new Block(shard, text(t.getValue()), t.getScore(), null));
                last = t.getScore();
            }
            if (page.size() == limit) {
                cutAt.add(last);
            }
        }
        blocks.sort(Comparator.comparingDouble(Block::score));
        ShardMerge.Found<Cold> found = read(spec, blocks, limit, List.of(), dues, budget);
        // a shard cut at a score the listing reached may hold earlier entries in blocks it did not list (rare: every
        // listed block holds a live entry unless all of its entries were cancelled)
        double reached = dues.size() < limit ? Double.POSITIVE_INFINITY : dues.peek();
        boolean cut = cutAt.stream().anyMatch(score -> score < reached);
        return new ShardMerge.Found<>(found.items(), found.partial() || cut);
    }

    /**
     * The {@code limit} earliest cold entries whose member starts with {@code prefix}, over shards 0..shards-1. The
     * member equal to the prefix (an exact id) is found whatever the budget; the other matches while the budget lasts
     * (the member index is read part by part), except members over 32 bytes (indexed by a digest): the answer is then
     * partial.
     */
    ShardMerge.Found<Cold> search(BusinessSpec spec, int shards, String prefix, int limit, ListingBudget budget) {
        List<Block> blocks = new ArrayList<>();
        boolean partial = false;
        for (int shard = 0; shard < shards; shard++) {
            List<byte[]> key = List.of(bytes(spec.keys().coldMeta(shard)));
            Map<String, Map<String, Long>> byBlock = new LinkedHashMap<>();
            long from = 0;
            do {
                int most = budget.left() ? budget.readLeft() : 0;
                List<?> reply = redis.execute(FIND, key, bytes("prefix"), bytes(prefix), num(from), num(most));
                from = asLong(reply.get(0));
                budget.read((int) asLong(reply.get(1)));
                // members over 32 bytes are indexed by a digest (docs/cold-tier.md): found by their exact value, but
                // not by a prefix, so a listing that passed one may miss a match
                if (asLong(reply.get(2)) > 0) {
                    partial = true;
                }
                for (int i = 3; i + 1 < reply.size(); i += 2) {
                    IndexValue at = IndexValue.parse(text((byte[]) reply.get(i + 1)));
                    if (at != null) {
                        byBlock.computeIfAbsent(at.block(), b -> new HashMap<>())
                                .put(text((byte[]) reply.get(i)), at.movedDue());
                    }
                }
                if (from >= 0 && !budget.left()) {
                    partial = true;
                    break;
                }
            } while (from >= 0);
            if (byBlock.isEmpty()) {
                continue;
            }
            List<String> ids = new ArrayList<>(byBlock.keySet());
            byte[] coldKey = bytes(spec.keys().cold(shard));
            List<Double> scores = redis.execute((RedisCallback<List<Double>>) c -> c.zSetCommands()
                    .zMScore(coldKey, ids.stream().map(DelayQueueKeys::bytes).toArray(byte[][]::new)));
            for (int i = 0; i < ids.size(); i++) {
                Double score = scores == null ? null : scores.get(i);
                if (score != null) { // null: promoted meanwhile
                    blocks.add(new Block(
                            shard, ids.get(i), score, byBlock.get(ids.get(i)).keySet()));
                }
            }
        }
        // an exact id's block first, whatever the budget; then the others by score
        PriorityQueue<Long> dues = new PriorityQueue<>(Comparator.reverseOrder());
        List<Cold> exact = new ArrayList<>();
        for (Block b : List.copyOf(blocks)) {
            if (b.only() != null && b.only().contains(prefix)) {
                blocks.remove(b);
                live(spec, new Block(b.shard(), b.id(), b.score(), Set.of(prefix)), budget)
                        .forEach(c -> {
                            exact.add(c);
                            keep(dues, c.entry().dueAtMs(), limit);
                        });
            }
        }
        blocks.sort(Comparator.comparingDouble(Block::score));
        ShardMerge.Found<Cold> found = read(spec, blocks, limit, exact, dues, budget);
        return new ShardMerge.Found<>(found.items(), found.partial() || partial);
    }

    /**
     * Reads the blocks in score order and keeps the {@code limit} earliest live entries (of the blocks' named
     * members only, when named), {@code kept} included. {@code dues}: a max-heap of the earliest due times listed so
     * far, hot ones included; a block whose score is past its {@code limit}-th holds no entry that could be listed,
     * nor does any later one.
     */
    private ShardMerge.Found<Cold> read(
            BusinessSpec spec,
            List<Block> blocks,
            int limit,
            List<Cold> kept,
            PriorityQueue<Long> dues,
            ListingBudget budget) {
        PriorityQueue<Cold> latest = new PriorityQueue<>(ORDER.reversed());
        latest.addAll(kept);
        boolean partial = false;
        for (Block b : blocks) {
            if (dues.size() >= limit && b.score() > dues.peek()) {
                break;
            }
            if (!budget.left()) {
                partial = true;
                break;
            }
            for (Cold c : live(spec, b, budget)) {
                keep(dues, c.entry().dueAtMs(), limit);
                latest.add(c);
            }
        }
        while (latest.size() > limit) {
            latest.poll();
        }
        List<Cold> found = new ArrayList<>(latest);
        found.sort(ORDER);
        return new ShardMerge.Found<>(found, partial);
    }

    /** The live entries of a block (of its named members only, when named); none when it was promoted meanwhile. */
    private List<Cold> live(BusinessSpec spec, Block b, ListingBudget budget) {
        byte[] block = redis.execute((RedisCallback<byte[]>)
                c -> c.hashCommands().hGet(bytes(spec.keys().coldBlocks(b.shard())), bytes(b.id())));
        if (block == null) {
            return List.of();
        }
        List<ColdBlock.Entry> entries;
        try {
            entries = ColdBlock.decode(block);
        } catch (RuntimeException e) {
            // not a block this relay can read (another program wrote it, or a newer format): the mover will fail on
            // it too and say so; the listing leaves it out and says why
            log.warn(
                    "business={} shard={}: cold block {} ({} bytes) left out of a listing, it cannot be read: {}",
                    spec.name(),
                    b.shard(),
                    b.id(),
                    block.length,
                    e.toString());
            return List.of();
        }
        budget.read(entries.size());
        List<ColdBlock.Entry> wanted = b.only() == null
                ? entries
                : entries.stream()
                        .filter(e -> b.only().contains(text(e.member())))
                        .toList();
        if (wanted.isEmpty()) {
            return List.of();
        }
        Object[] args = new Object[wanted.size() + 1];
        args[0] = bytes("members");
        for (int i = 0; i < wanted.size(); i++) {
            args[i + 1] = wanted.get(i).member();
        }
        List<?> index = redis.execute(FIND, List.of(bytes(spec.keys().coldMeta(b.shard()))), args);
        List<Cold> live = new ArrayList<>();
        for (int i = 0; index != null && i < index.size(); i++) {
            IndexValue at = IndexValue.parse(text((byte[]) index.get(i)));
            if (at != null && at.block().equals(b.id())) {
                ColdBlock.Entry e = wanted.get(i);
                long due = at.movedDue() != null ? at.movedDue() : e.dueMs();
                String member = text(e.member());
                budget.hold(member);
                live.add(new Cold(Entry.of(b.shard(), member, (double) due), e.payload()));
            }
        }
        return live;
    }

    private static void keep(PriorityQueue<Long> dues, long due, int limit) {
        dues.add(due);
        if (dues.size() > limit) {
            dues.poll();
        }
    }

    /** A block to read: its shard, id and score; {@code only}: these of its entries (null: every one). */
    private record Block(int shard, String id, double score, @Nullable Set<String> only) {}

    /** A member index value: {@code <block id>} or {@code <block id>:<due ms>} (rescheduled while cold). */
    private record IndexValue(String block, @Nullable Long movedDue) {
        static @Nullable IndexValue parse(String value) {
            if (value.isEmpty()) {
                return null;
            }
            int colon = value.indexOf(':');
            if (colon < 0) {
                return new IndexValue(value, null);
            }
            try {
                return new IndexValue(value.substring(0, colon), Long.parseLong(value.substring(colon + 1)));
            } catch (NumberFormatException e) {
                log.warn("cold member index value '{}' is not <block id>:<due ms>; its entry is left out", value);
                return null;
            }
        }
    }

    private static byte[] num(long value) {
        return bytes(Long.toString(value));
    }

    private static long asLong(Object value) {
        return value instanceof byte[] b ? Long.parseLong(text(b)) : ((Number) value).longValue();
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
