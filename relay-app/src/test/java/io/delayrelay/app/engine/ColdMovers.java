package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.ContractModel.ColdEntry;
import io.delayrelay.app.engine.cold.ColdBlock;
import io.delayrelay.app.engine.cold.ColdMover;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.engine.cold.ColdTiming;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.ReturnType;

import static io.delayrelay.app.engine.ContractWorld.bytes;
import static io.delayrelay.app.engine.ContractWorld.covered;
import static io.delayrelay.app.engine.ContractWorld.same;
import static io.delayrelay.app.engine.ContractWorld.text;

/**
 * The cold tier's two movers in the contract model ({@link ContractWorld}): each step is one of the calls
 * {@link ColdMover} makes ({@code cold-pick.lua}, {@code cold-demote.lua} per block, {@code cold-due.lua},
 * {@code cold-promote.lua}) on the production {@link ColdStore} with the pinned clock, and the same step on the
 * {@link ContractModel}; answers are compared at once. A mover keeps its listings between steps, so the two movers
 * interleave with each other and with everything else, and a mover that drops its listing (a new pick) is one killed
 * between pick and demote. {@link #check} compares every cold key of the business with the model after each step.
 */
final class ColdMovers {

    /**
     * The model's cold-after, 2 s: due times are drawn up to 9 s ahead, time advances up to 5 s a step. Bucket and lead as {@link ColdTiming} derives them
     * (A/4, A/2); production requires A ≥ 10 s only so that the lead spans many mover periods, which the model's
     * steps replace.
     */
    static final ColdTiming TIMING = new ColdTiming(2_000, 500, 1_000, 250);

    static final int MOVERS = 2;

    /** Blocks listed per cold-due.lua call: small, so a listing can leave due blocks for the next one. */
    static final int DUE_LIMIT = 2;

    private static final int PICK_LIMIT = 2_000;

    private final ContractWorld world;
    private final ColdStore store;
    private final DelayQueueKeys keys;
    private final Listing[] listings = new Listing[MOVERS];
    private final List<List<ColdStore.DueBlock>> dueListed = new ArrayList<>();
    private final int[] dueShard = new int[MOVERS];

    /** A mover's pick not yet demoted: its shard and blocks (the production cut), in order. */
    private record Listing(int shard, List<List<ColdBlock.Entry>> blocks) {}

    ColdMovers(ContractWorld world, ColdStore store) {
        this.world = world;
        this.store = store;
        this.keys = world.keys;
        for (int i = 0; i < MOVERS; i++) {
            dueListed.add(new ArrayList<>());
        }
    }

    private ContractModel model() {
        return world.model;
    }

    /** cold-pick.lua on a shard the mover moves (it goes over the relay's scan width); the listing replaces any kept. */
    void pick(int mover, int pick) {
        int shard = pick % world.scanWidth(mover);
        ColdStore.Pick got = store.pick(keys, shard, TIMING.coldAfterMs(), PICK_LIMIT);
        List<ColdEntry> expected = model().coldPick(shard, TIMING.coldAfterMs());
        same("cold-pick of shard " + shard + " by mover " + mover + " at " + model().now, expected, entries(got));
        same("cold-pick's Redis time", model().now, got.nowMs());
        if (listings[mover] != null) {
            covered("cold listings dropped undemoted (a mover killed between pick and demote)");
        }
        listings[mover] = got.entries().isEmpty()
                ? null
                : new Listing(shard, new ArrayList<>(ColdMover.blocks(got.entries(), TIMING)));
    }

    /** cold-demote.lua of the mover's kept listing: its first block, or all of them (as a whole pass does). */
    void demote(int mover, boolean all) {
        Listing listing = listings[mover];
        if (listing == null) {
            return;
        }
        int fan = store.fanOut(keys, listing.shard());
        while (!listing.blocks().isEmpty()) {
            List<ColdBlock.Entry> block = listing.blocks().remove(0);
            ColdStore.Demoted got = store.demote(keys, listing.shard(), block, fan);
            long[] expected = model().coldDemote(listing.shard(), entries(block));
            String what = "cold-demote of " + entries(block) + " in shard " + listing.shard() + " by mover " + mover;
            same(what + ": moved", expected[0], (long) got.moved());
            same(what + ": block id", expected[1], got.blockId());
            covered(got.moved() == 0 ? "cold blocks not written (every listed entry changed)" : "cold blocks written");
            if (got.moved() > 0 && got.moved() < block.size()) {
                covered("cold blocks written from a stale listing (some entries stayed hot)");
            }
            if (!all) {
                break;
            }
        }
        if (listing.blocks().isEmpty()) {
            listings[mover] = null;
        } else {
            covered("cold listings left half demoted");
        }
    }

    /** cold-due.lua on a shard the mover moves, the lead of {@link #TIMING}; the listing replaces any kept. */
    void listDue(int mover, int pick) {
        int shard = pick % world.scanWidth(mover);
        List<ColdStore.DueBlock> got = store.due(keys, shard, TIMING.leadMs(), DUE_LIMIT);
        same(
                "cold-due of shard " + shard + " by mover " + mover + " at " + model().now,
                model().coldDue(shard, TIMING.leadMs(), DUE_LIMIT),
                got.stream().map(ColdStore.DueBlock::id).toList());
        if (!got.isEmpty()) {
            covered("cold-due listings with blocks");
        }
        dueListed.set(mover, new ArrayList<>(got));
        dueShard[mover] = shard;
    }

    /** cold-promote.lua of one block of the mover's kept due listing (a block another mover may have promoted). */
    void promote(int mover, int which) {
        List<ColdStore.DueBlock> listed = dueListed.get(mover);
        if (listed.isEmpty()) {
            return;
        }
        promote(mover, dueShard[mover], listed.remove(which % listed.size()));
    }

    private void promote(int mover, int shard, ColdStore.DueBlock block) {
        ColdStore.Promoted got = store.promote(keys, shard, block);
        int[] expected = model().coldPromote(shard, Long.parseLong(block.id()));
        String what = "cold-promote of block " + block.id() + " in shard " + shard + " by mover " + mover;
        same(what + ": gone", expected[0] < 0, got.gone());
        if (got.gone()) {
            covered("cold promotions of a block already promoted");
            return;
        }
        same(what + ": back", expected[0], got.back());
        same(what + ": skipped", expected[1], got.skipped());
        covered("cold blocks promoted");
        if (got.skipped() > 0) {
            covered("cold promotions skipping cancelled or replaced entries");
        }
    }

    /**
     * A whole pass of a mover, as {@link ColdMover} runs it each period: for every shard of its relay's scan width,
     * every block due within the lead comes back, then everything due after cold-after goes cold.
     */
    void pass(int mover) {
        for (int shard = 0; shard < world.scanWidth(mover); shard++) {
            List<ColdStore.DueBlock> due;
            do {
                listDue(mover, shard);
                due = new ArrayList<>(dueListed.get(mover));
                dueListed.get(mover).clear();
                for (ColdStore.DueBlock block : due) {
                    promote(mover, shard, block);
                }
            } while (due.size() == DUE_LIMIT);
            pick(mover, shard);
            demote(mover, true);
        }
    }

    /**
     * Every cold key of the business equals the model: per shard the block zset (ids, scores), the blocks' contents
     * (decoded), the member index (each field in the part its SHA-1 names) and cold-meta's fan ("2:<fan-out>") and
     * seq.
     */
    void check(String after) {
        List<Object> read = coldSnapshot();
        for (int s = 0; s < ContractModel.MAX_SHARDS; s++) {
            ContractModel.Shard shard = model().shard(s);
            String where = "shard " + s + " " + after + ": ";
            List<Object> of = list(read.get(s));
            Map<String, Long> scores = new TreeMap<>();
            pairs(of.get(0), (member, score) -> scores.put(text(member), (long) Double.parseDouble(text(score))));
            Map<String, Long> expectedScores = new TreeMap<>();
            shard.blocks.forEach((id, b) -> expectedScores.put(Long.toString(id), b.score));
            same(where + keys.cold(s), expectedScores, scores);

            Map<String, List<ColdEntry>> blocks = new TreeMap<>();
            pairs(of.get(1), (id, block) -> blocks.put(text(id), entries(ColdBlock.decode(block))));
            Map<String, List<ColdEntry>> expectedBlocks = new TreeMap<>();
            shard.blocks.forEach((id, b) -> expectedBlocks.put(Long.toString(id), sorted(b.entries)));
            same(where + keys.coldBlocks(s), expectedBlocks, blocks);

            Map<String, String> meta = new TreeMap<>();
            pairs(of.get(2), (k, v) -> meta.put(text(k), text(v)));
            Map<String, String> index = new TreeMap<>();
            if (shard.seq == 0) {
                same(where + keys.coldMeta(s), Map.of(), meta);
            } else {
                same(where + keys.coldMeta(s) + " seq", Long.toString(shard.seq), meta.get("seq"));
                same(where + keys.coldMeta(s) + " fan recorded", shard.coldTier, meta.containsKey("fan"));
                same(
                        where + keys.coldMeta(s) + " index rule",
                        shard.coldTier ? "2" : "none",
                        meta.containsKey("fan") ? meta.get("fan").split(":")[0] : "none");
            }
            List<Object> parts = list(of.get(3));
            if (shard.coldTier) {
                int fan = Integer.parseInt(meta.get("fan").split(":")[1]);
                for (int i = 0; i + 1 < parts.size(); i += 2) {
                    String name = text((byte[]) parts.get(i));
                    int n = Integer.parseInt(name.substring(name.lastIndexOf(':') + 1));
                    pairs(parts.get(i + 1), (m, at) -> {
                        same(where + text(m) + "'s index part", part(text(m), fan), n);
                        index.put(text(m), text(at));
                    });
                }
            } else {
                Set<String> names = new java.util.TreeSet<>();
                for (int i = 0; i < parts.size(); i += 2) {
                    names.add(text((byte[]) parts.get(i)));
                }
                same(where + "index parts without a cold tier", Set.of(), names);
            }
            Map<String, String> expectedIndex = new TreeMap<>();
            shard.cold.forEach((m, cold) -> expectedIndex.put(m, cold.pointer()));
            same(where + "cold member index", expectedIndex, index);
        }
    }

    /**
     * Every cold key of every shard in one script call (a step's check would otherwise take a score of round trips):
     * per shard its cold zset with scores, its blocks, its meta, and each part of its member index (found with KEYS
     * on the model's private server) with its fields.
     */
    private List<Object> coldSnapshot() {
        List<byte[]> args = new ArrayList<>();
        for (int s = 0; s < ContractModel.MAX_SHARDS; s++) {
            args.add(bytes(keys.cold(s)));
            args.add(bytes(keys.coldBlocks(s)));
            args.add(bytes(keys.coldMeta(s)));
        }
        for (int s = 0; s < ContractModel.MAX_SHARDS; s++) {
            args.add(bytes(indexPattern(s)));
        }
        try (RedisConnection c = world.shared.raw().getConnection()) {
            return c.scriptingCommands()
                    .eval(COLD_SNAPSHOT, ReturnType.MULTI, 3 * ContractModel.MAX_SHARDS, args.toArray(new byte[0][]));
        }
    }

    private static final byte[] COLD_SNAPSHOT = bytes(
            """
            local out = {}
            for s = 1, #ARGV do
              local parts = {}
              for _, part in ipairs(redis.call('KEYS', ARGV[s])) do
                parts[#parts + 1] = part
                parts[#parts + 1] = redis.call('HGETALL', part)
              end
              out[s] = {
                redis.call('ZRANGE', KEYS[3 * s - 2], 0, -1, 'WITHSCORES'),
                redis.call('HGETALL', KEYS[3 * s - 1]),
                redis.call('HGETALL', KEYS[3 * s]),
                parts
              }
            end
            return out
            """);

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object reply) {
        return reply == null ? List.of() : (List<Object>) reply;
    }

    /** Each pair of a flat reply (field, value; member, score). */
    private static void pairs(Object reply, java.util.function.BiConsumer<byte[], byte[]> each) {
        List<Object> flat = list(reply);
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            each.accept((byte[]) flat.get(i), (byte[]) flat.get(i + 1));
        }
    }

    /** The names of every part of the shard's member index: {@code {K:i}:cold-ix:*}. */
    private String indexPattern(int shard) {
        String first = keys.coldIndex(shard, 0);
        return first.substring(0, first.length() - 1) + "*";
    }

    private static List<ColdEntry> entries(ColdStore.Pick pick) {
        return entries(pick.entries());
    }

    private static List<ColdEntry> entries(List<ColdBlock.Entry> entries) {
        return entries.stream()
                .map(e -> new ColdEntry(text(e.member()), e.dueMs(), text(e.payload())))
                .toList();
    }

    /** A block's entries as {@link ColdBlock} stores them: by due time (stable). */
    private static List<ColdEntry> sorted(List<ColdEntry> entries) {
        List<ColdEntry> out = new ArrayList<>(entries);
        out.sort(java.util.Comparator.comparingLong(ColdEntry::due));
        return out;
    }

    /** The index part of a member, as the scripts compute it: the first 24 bits of SHA-1, modulo the fan-out. */
    static int part(String member, int fan) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-1").digest(member.getBytes(StandardCharsets.UTF_8));
            return (((h[0] & 0xff) << 16) | ((h[1] & 0xff) << 8) | (h[2] & 0xff)) % fan;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
