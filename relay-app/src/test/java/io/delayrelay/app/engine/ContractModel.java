package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

import io.delayrelay.api.ShardSelector;

/**
 * The Redis contract as plain maps: what each shard of one business must hold after every producer, relay and
 * operator action, written from the contract's documented rules (the scripts' headers, the README), not from the
 * scripts' code. {@link ContractWorld} runs each action on the real scripts and on this model and compares them.
 *
 * <p>Where the documented rule and the correct outcome differ (the known findings of the 2026-11-24 engine review),
 * the model holds the correct outcome; {@link Finding} names them.
 *
 * <p>Long because the contract is: every script's effect is here once, in plain Java, next to the others it must
 * agree with (the payload rule alone is kept by six of them).
 */
final class ContractModel {

    /**
     * Known defects of the 2026-11-24 engine review that the model's checks are written against (correct behaviour);
     * {@code -Dmodel.tolerate=1,2,3} relaxes the named checks so a run can look for other defects on code that still
     * has them.
     */
    enum Finding {
        /** 1: pop.lua reads only 4 pages of due schedules, so blocked members starve the shard's other due entries. */
        HEAD_OF_LINE_BLOCKING(1),
        /** 2: the dead-set size trim removes every dead letter sharing the cutoff's time of death. */
        TRIM_REMOVES_TIES(2),
        /** 3: retiring a shard count leaves its dead letters beyond the scan width: not listed, counted, trimmed. */
        STRANDED_DEAD_LETTERS(3);

        final int number;

        Finding(int number) {
            this.number = number;
        }

        boolean tolerated() {
            String list = System.getProperty("model.tolerate", "");
            for (String n : list.split(",")) {
                if (n.trim().equals(Integer.toString(number))) {
                    return true;
                }
            }
            return false;
        }

        /** A failure message tied to the finding. */
        String says(String what) {
            return "[finding " + number + " of the 2026-11-24 engine review, " + name() + "] " + what;
        }
    }

    /**
     * An unsettled delivery of a member ({@code {K:i}:inflight} plus its {@code {K:i}:attempts} record): leased (token
     * set, score = lease deadline) or waiting for its retry (token empty, score = retry time).
     */
    record Flight(long score, int failed, long origin, String token) {
        boolean leased() {
            return !token.isEmpty();
        }

        String record() {
            return failed + ":" + origin + ":" + token;
        }
    }

    record Dead(long diedAt, String reason) {}

    /** One entry a pop hands out. */
    record Popped(String member, long origin, String payload, int failed) {}

    /** The settings the model's relay runs with. */
    record Settings(
            int batch,
            long batchBytes,
            long leaseMs,
            long retryMs,
            long retryMaxMs,
            int maxAttempts,
            long maxLatenessMs,
            boolean dropLate) {

        Settings(int batch, long batchBytes, long leaseMs, long retryMs, long retryMaxMs, int maxAttempts) {
            this(batch, batchBytes, leaseMs, retryMs, retryMaxMs, maxAttempts, -1, false);
        }
    }

    /** One entry of a cold block as the relay listed it (payload null when scheduled by message). */
    record ColdEntry(String member, long due, String payload) {}

    /**
     * A cold block ({@code {K:i}:cold-blocks} + its score in {@code {K:i}:cold}): every entry the listing gave, moved
     * or not (the bytes are written whole); only those the member index points at are live.
     */
    static final class Block {
        long score;
        final List<ColdEntry> entries;

        Block(long score, List<ColdEntry> entries) {
            this.score = score;
            this.entries = entries;
        }
    }

    /**
     * A live cold entry: the member index's field ({@code <block>}, or {@code <block>:<due>} after a reschedule), its
     * due time and payload.
     */
    record Cold(long block, long due, String payload, boolean rescheduled) {
        String pointer() {
            return rescheduled ? block + ":" + due : Long.toString(block);
        }
    }

    /**
     * One shard's keys: K:i, {K:i}:inflight + attempts, {K:i}:dead + dead-reasons, {K:i}:payloads, and its cold tier:
     * {K:i}:cold + cold-blocks (the blocks), the member index (live cold entries) and cold-meta's seq.
     */
    static final class Shard {
        final Map<String, Long> scheduled = new TreeMap<>();
        final Map<String, Flight> flights = new TreeMap<>();
        final Map<String, Dead> dead = new TreeMap<>();
        final Map<String, String> payloads = new TreeMap<>();
        final Map<String, Cold> cold = new TreeMap<>();
        final Map<Long, Block> blocks = new TreeMap<>();
        /** The last block id ({@code cold-meta}'s seq), 0 before the first demotion (no cold-meta then). */
        long seq;
        /**
         * Whether {@code cold-meta} records a fan-out and the index rule: from a demotion that wrote a block until the
         * promotion that deleted the shard's last block.
         */
        boolean coldTier;

        /** What a pop of the shard can hand out or take back (the cold tier is invisible to pop.lua). */
        boolean holdsDeliveries() {
            return !scheduled.isEmpty() || !flights.isEmpty();
        }

        /** What keeps a shard count from retiring, dead letters aside: deliveries, or a cold block. */
        boolean holdsWork() {
            return holdsDeliveries() || !blocks.isEmpty();
        }
    }

    /** How many shards any count may have: every shard index the model can touch is below it. */
    static final int MAX_SHARDS = 4;

    static final long RECHECK_MS = ShardStore.BLOCKED_RECHECK_MS;

    final Settings settings;
    /**
     * The batch size and byte budget left for the shard a pop of several shards serves now (each takes what the
     * earlier ones left; -1: the settings' own), and whether nothing was taken before it in that call (only then is
     * one entry always taken).
     */
    private int popBatchLeft = -1;

    private long popBytesLeft = -1;
    private boolean firstTaker = true;
    final Map<Integer, Shard> shards = new TreeMap<>();
    long now;
    int metaShards;
    List<Integer> draining = new ArrayList<>();
    List<Integer> history = new ArrayList<>();
    boolean paused;

    // The ledger: every copy ever scheduled ends in exactly one of these, or is still live.
    long created;
    long replaced;
    long cancelled;
    long delivered;
    long deadSuperseded;
    long trimmed;
    long purged;
    long dropped;

    ContractModel(Settings settings, long now, int shards) {
        this.settings = settings;
        this.now = now;
        this.metaShards = shards;
        for (int i = 0; i < MAX_SHARDS; i++) {
            this.shards.put(i, new Shard());
        }
    }

    Shard shard(int i) {
        return shards.get(i);
    }

    // ---- producers ----

    static int shardOf(String member, int count) {
        return ShardSelector.shardOf(member.getBytes(StandardCharsets.UTF_8), count);
    }

    /** The shards a producer looks in for a member: under the count in force, then draining, then history. */
    Set<Integer> candidates(String member) {
        Set<Integer> out = new LinkedHashSet<>();
        out.add(shardOf(member, metaShards));
        draining.forEach(m -> out.add(shardOf(member, m)));
        history.forEach(m -> out.add(shardOf(member, m)));
        return out;
    }

    /** schedule.lua in the shard the member hashes to now, then cancel.lua in its other candidate shards. */
    void schedule(String member, long due, String payload) {
        int s = shardOf(member, metaShards);
        Shard shard = shard(s);
        created++;
        if (shard.scheduled.containsKey(member)) {
            replaced++;
        }
        if (payload != null) {
            shard.payloads.put(member, payload);
        }
        shard.scheduled.put(member, due);
        if (shard.cold.remove(member) != null) {
            replaced++; // schedule.lua drops the member's cold copy: the new one is the one live copy
            ContractWorld.covered("cold entries scheduled again");
        }
        for (int other : candidates(member)) {
            if (other != s && cancelIn(other, member)) {
                replaced++;
            }
        }
    }

    /**
     * A plain ZADD into the shard the member hashes to under K:meta's count: no other shard is touched, and no cold
     * copy either (a raw write cannot reach the cold tier: the cold copy stays live beside the hot one).
     */
    void plainZadd(String member, long due) {
        Shard shard = shard(shardOf(member, metaShards));
        created++;
        if (shard.scheduled.put(member, due) != null) {
            replaced++;
        }
        if (shard.cold.containsKey(member)) {
            ContractWorld.covered("plain ZADDs of a cold member (a second live copy)");
        }
    }

    /**
     * Moves the first scheduled copy among the candidates, hot (K:i) before cold (the member index gets
     * {@code <block>:<due>}, the block's score is lowered to the due time when earlier), removes the others; false
     * when none is scheduled.
     */
    boolean reschedule(String member, long due) {
        boolean moved = false;
        for (int s : candidates(member)) {
            Shard shard = shard(s);
            if (moved) {
                if (cancelIn(s, member)) {
                    replaced++;
                }
            } else if (shard.scheduled.containsKey(member)) {
                shard.scheduled.put(member, due);
                moved = true;
            } else if (shard.cold.containsKey(member)) {
                Cold c = shard.cold.get(member);
                shard.cold.put(member, new Cold(c.block(), due, c.payload(), true));
                Block block = shard.blocks.get(c.block());
                block.score = Math.min(block.score, due);
                moved = true;
                ContractWorld.covered("cold entries rescheduled");
            }
        }
        return moved;
    }

    /** Cancels every scheduled copy among the candidates. */
    boolean cancel(String member) {
        boolean removed = false;
        for (int s : candidates(member)) {
            if (cancelIn(s, member)) {
                cancelled++;
                removed = true;
            }
        }
        return removed;
    }

    /**
     * cancel.lua: removes the hot copy (the payload goes only when nothing else in the shard refers to it) and the
     * cold one (its member index field); true when either was there.
     */
    private boolean cancelIn(int s, String member) {
        Shard shard = shard(s);
        boolean cold = shard.cold.remove(member) != null;
        boolean hot = cancelHotIn(s, member);
        if (cold) {
            ContractWorld.covered("cold entries cancelled");
            if (hot) {
                replaced++; // a raw ZADD had made a second copy: both go, one is counted by the caller
            }
        }
        return hot || cold;
    }

    /** entries.lua 'cancel' (and cancel.lua's hot part): K:i only, the payload when unreferenced. */
    private boolean cancelHotIn(int s, String member) {
        Shard shard = shard(s);
        if (shard.scheduled.remove(member) == null) {
            return false;
        }
        dropPayloadIfUnreferenced(shard, member);
        return true;
    }

    private static void dropPayloadIfUnreferenced(Shard shard, String member) {
        if (!shard.scheduled.containsKey(member)
                && !shard.flights.containsKey(member)
                && !shard.dead.containsKey(member)) {
            shard.payloads.remove(member);
        }
    }

    // ---- the relay ----

    /** What a pop of the shard must answer (before the byte budget and the page rules are applied). */
    record PopExpectation(
            long now, List<Popped> eligible, int expired, boolean emptyProbe, long earliest, boolean nothingDue) {}

    /**
     * The lead (pop-ahead) of the pop being checked, ms: its schedules due by now + lead are eligible too (retries and
     * leases by now only); 0: none.
     */
    long popLead;

    /** The batch size of the pop being checked: the call's, or what the earlier shards of a pop of several left. */
    int popBatch() {
        return popBatchLeft >= 0 ? popBatchLeft : settings.batch();
    }

    /** The byte budget of the pop being checked (see {@link #popBatch()}). */
    long popBytes() {
        return popBytesLeft >= 0 ? popBytesLeft : settings.batchBytes();
    }

    /** Checks of one shard of a pop of several: what the shards before it left, and whether they took anything. */
    void limitPop(int batchLeft, long bytesLeft, boolean nothingTakenBefore) {
        popBatchLeft = batchLeft;
        popBytesLeft = bytesLeft;
        firstTaker = nothingTakenBefore;
    }

    /** Back to a pop of one shard. */
    void unlimitPop() {
        popBatchLeft = -1;
        popBytesLeft = -1;
        firstTaker = true;
    }

    PopExpectation expectPop(int s, boolean knownDue) {
        Shard shard = shard(s);
        long earliest = Long.MAX_VALUE;
        for (long due : shard.scheduled.values()) {
            earliest = Math.min(earliest, due);
        }
        for (Flight f : shard.flights.values()) {
            earliest = Math.min(earliest, f.score());
        }
        long horizon = now + popLead;
        if (!knownDue && earliest == Long.MAX_VALUE) {
            return new PopExpectation(0, List.of(), 0, true, -1, true);
        }
        boolean scheduleDue = shard.scheduled.values().stream().anyMatch(d -> d <= horizon);
        boolean flightDue = shard.flights.values().stream().anyMatch(f -> f.score() <= now);
        if (!knownDue && !scheduleDue && !flightDue) {
            return new PopExpectation(now, List.of(), 0, false, earliest, true);
        }
        List<Popped> eligible = new ArrayList<>();
        int expired = 0;
        // due retries first, among the first 2 x batch due entries of inflight (pop.lua's documented window)
        List<Map.Entry<String, Flight>> dueFlights = shard.flights.entrySet().stream()
                .filter(e -> e.getValue().score() <= now)
                .sorted(Comparator.comparingLong(
                                (Map.Entry<String, Flight> e) -> e.getValue().score())
                        .thenComparing(Map.Entry::getKey))
                .limit(2L * popBatch())
                .toList();
        for (Map.Entry<String, Flight> e : dueFlights) {
            Flight f = e.getValue();
            if (f.leased()) {
                expired++;
            } else {
                eligible.add(new Popped(e.getKey(), f.origin(), shard.payloads.get(e.getKey()), f.failed()));
            }
        }
        // then due schedules whose member has no unsettled delivery, earliest first
        shard.scheduled.entrySet().stream()
                .filter(e -> e.getValue() <= horizon && !shard.flights.containsKey(e.getKey()))
                .sorted(Map.Entry.<String, Long>comparingByValue().thenComparing(Map.Entry::getKey))
                .forEach(e -> eligible.add(new Popped(e.getKey(), e.getValue(), shard.payloads.get(e.getKey()), 0)));
        return new PopExpectation(now, eligible, expired, false, earliest, false);
    }

    /**
     * Whether pop.lua's page limit (finding 1: at most 4 pages of due schedules, each as long as the room left in the
     * batch) hides a due schedule the pop may take: true when the blocked members ahead of it fill those pages.
     */
    boolean pageLimitHides(int s, PopExpectation expected) {
        Shard shard = shard(s);
        int taken = (int) Math.min(
                popBatch(),
                expected.eligible().stream()
                        .filter(p -> shard.flights.containsKey(p.member()))
                        .count());
        List<String> due = shard.scheduled.entrySet().stream()
                .filter(e -> e.getValue() <= now + popLead)
                .sorted(Map.Entry.<String, Long>comparingByValue().thenComparing(Map.Entry::getKey))
                .map(Map.Entry::getKey)
                .toList();
        int offset = 0;
        for (int pages = 0; taken < popBatch() && pages < 4; pages++) {
            int want = popBatch() - taken;
            List<String> page = due.subList(Math.min(offset, due.size()), Math.min(offset + want, due.size()));
            for (String m : page) {
                if (!shard.flights.containsKey(m)) {
                    taken++;
                }
            }
            offset += page.size();
            if (page.size() < want) {
                return false;
            }
        }
        return due.stream().skip(offset).anyMatch(m -> !shard.flights.containsKey(m)) && taken < popBatch();
    }

    /**
     * The late policy (docs/configuration.md "Late policy"): an entry a pop would hand out more than max-lateness
     * after its original due time is late (the model's payloads carry no per-message expiry).
     */
    boolean isLate(Popped p) {
        return settings.maxLatenessMs() >= 0 && now > p.origin() + settings.maxLatenessMs();
    }

    /**
     * What pop.lua does with the late candidates: out of K:i or inflight, then into the dead set with reason expired
     * (a dead letter of the same member is superseded), or dropped with the payload no one needs any more.
     */
    void applyLate(int s, List<Popped> late) {
        Shard shard = shard(s);
        for (Popped p : late) {
            String m = p.member();
            if (shard.flights.remove(m) == null) {
                shard.scheduled.remove(m);
            }
            if (settings.dropLate()) {
                dropPayloadIfUnreferenced(shard, m);
                dropped++;
                ContractWorld.covered("late entries dropped");
            } else {
                String reason = "expired: " + (now - p.origin()) + " ms late, max-lateness " + settings.maxLatenessMs()
                        + " ms (due: " + p.origin() + ") (attempts: " + p.failed() + ")";
                if (shard.dead.put(m, new Dead(now, reason)) != null) {
                    deadSuperseded++;
                }
                ContractWorld.covered("late entries dead-lettered");
            }
        }
    }

    /** How many of the eligible entries one pop takes: the batch size, cut by the byte budget (one at least). */
    int popCount(List<Popped> eligible) {
        int n = Math.min(popBatch(), eligible.size());
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            Popped p = eligible.get(i);
            bytes += utf8(p.member()) + (p.payload() == null ? 0 : utf8(p.payload()));
            if (bytes > popBytes() && (i > 0 || !firstTaker)) {
                return i;
            }
        }
        return n;
    }

    /** Applies what a pop took: each entry leased under the token until now + lease. */
    void applyPop(int s, String token, List<Popped> taken) {
        Shard shard = shard(s);
        for (Popped p : taken) {
            shard.scheduled.computeIfPresent(p.member(), (m, due) -> shard.flights.containsKey(m) ? due : null);
            shard.flights.put(p.member(), new Flight(now + settings.leaseMs(), p.failed(), p.origin(), token));
        }
    }

    /**
     * The most a pop's nextDue may be (when the batch was not full): the shard must be looked at again no later than
     * the earliest moment something in it can move.
     */
    long latestNextDue(int s) {
        Shard shard = shard(s);
        long bound = Long.MAX_VALUE;
        for (Map.Entry<String, Long> e : shard.scheduled.entrySet()) {
            if (!shard.flights.containsKey(e.getKey())) {
                bound = Math.min(bound, e.getValue());
            }
        }
        for (Flight f : shard.flights.values()) {
            bound = Math.min(bound, f.score());
        }
        return Math.max(bound, now + RECHECK_MS);
    }

    /** ack.lua: settles the members still leased under the token; returns how many. */
    int ack(int s, String token, List<String> members) {
        Shard shard = shard(s);
        int settled = 0;
        for (String m : members) {
            Flight f = shard.flights.get(m);
            if (f != null && f.token().equals(token)) {
                shard.flights.remove(m);
                dropPayloadIfUnreferenced(shard, m);
                delivered++;
                settled++;
            }
        }
        return settled;
    }

    /** What requeue.lua answers: how many wait for a retry, which died (in order). */
    record Requeued(int requeued, List<String> dead) {}

    /** requeue.lua 'members' / 'release' on the members still leased under the token. */
    Requeued requeue(int s, String token, List<String> members, int maxAttempts, String reason, boolean release) {
        Shard shard = shard(s);
        List<Flight> work = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (String m : members) {
            Flight f = shard.flights.get(m);
            if (f != null && f.token().equals(token)) {
                names.add(m);
                work.add(f);
            }
        }
        return settle(shard, names, work, maxAttempts, reason, release);
    }

    /** requeue.lua 'expired': every lease of the shard whose deadline passed, whoever held it. */
    Requeued requeueExpired(int s, String reason) {
        Shard shard = shard(s);
        List<String> names = new ArrayList<>();
        List<Flight> work = new ArrayList<>();
        shard.flights.entrySet().stream()
                .filter(e -> e.getValue().score() <= now && e.getValue().leased())
                .sorted(Comparator.comparingLong(
                                (Map.Entry<String, Flight> e) -> e.getValue().score())
                        .thenComparing(Map.Entry::getKey))
                .forEach(e -> {
                    names.add(e.getKey());
                    work.add(e.getValue());
                });
        return settle(shard, names, work, settings.maxAttempts(), reason, false);
    }

    private Requeued settle(
            Shard shard, List<String> names, List<Flight> work, int maxAttempts, String reason, boolean release) {
        int requeued = 0;
        List<String> died = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String m = names.get(i);
            Flight f = work.get(i);
            int failed = release ? f.failed() : f.failed() + 1;
            if (!release && failed >= maxAttempts) {
                shard.flights.remove(m);
                ContractWorld.covered("deliveries dead-lettered");
                if (shard.dead.put(m, new Dead(now, reason + " (due: " + f.origin() + ") (attempts: " + failed + ")"))
                        != null) {
                    deadSuperseded++;
                }
                died.add(m);
            } else {
                long delay = release
                        ? settings.retryMs()
                        : Math.min(settings.retryMs() * (1L << Math.min(failed - 1, 30)), settings.retryMaxMs());
                shard.flights.put(m, new Flight(now + delay, failed, f.origin(), ""));
                requeued++;
            }
        }
        return new Requeued(requeued, died);
    }

    // ---- shard counts ----

    /** reshard.lua: the count in force changes; the old one drains and joins the history. */
    void reshard(int count) {
        if (count != metaShards) {
            draining.add(0, metaShards);
            history.add(0, metaShards);
        }
        draining = distinct(draining, m -> m > count, 64);
        history = distinct(history, m -> m != count, 8);
        metaShards = count;
    }

    private static List<Integer> distinct(List<Integer> list, Predicate<Integer> keep, int limit) {
        List<Integer> out = new ArrayList<>();
        for (int m : list) {
            if (keep.test(m) && !out.contains(m) && out.size() < limit) {
                out.add(m);
            }
        }
        return out;
    }

    /**
     * Whether the shards a draining count adds beyond the count in force hold nothing a relay must still pop or
     * bring back from the cold tier (a block counts, even one whose entries were all cancelled).
     */
    boolean drained(int count) {
        for (int s = metaShards; s < count; s++) {
            if (shard(s).holdsWork()) {
                return false;
            }
        }
        return true;
    }

    /** Whether those shards hold nothing at all, dead letters included. */
    boolean empty(int count) {
        for (int s = metaShards; s < count; s++) {
            if (shard(s).holdsWork() || !shard(s).dead.isEmpty()) {
                return false;
            }
        }
        return true;
    }

    // ---- operators ----

    /** The shards an operator's action reaches: all of them (correct), or the relay's scan width (finding 3). */
    int opsShards(int scanWidth) {
        return Finding.STRANDED_DEAD_LETTERS.tolerated() ? scanWidth : MAX_SHARDS;
    }

    /** dead-letters.lua 'replay' of one member in one shard; true when replayed. */
    boolean replay(int s, String member) {
        Shard shard = shard(s);
        if (!shard.dead.containsKey(member) || shard.flights.containsKey(member)) {
            return false;
        }
        shard.dead.remove(member);
        shard.flights.put(member, new Flight(now, 0, now, ""));
        ContractWorld.covered("dead letters replayed");
        return true;
    }

    /** dead-letters.lua 'purge' of one member in one shard; true when it was dead. */
    boolean purge(int s, String member) {
        Shard shard = shard(s);
        if (shard.dead.remove(member) == null) {
            return false;
        }
        purged++;
        dropPayloadIfUnreferenced(shard, member);
        return true;
    }

    /** DeadSetTrimmer's max-age bound: removes what died at or before the cutoff. */
    void trimDiedBy(int s, String member) {
        Shard shard = shard(s);
        shard.dead.remove(member);
        trimmed++;
        dropPayloadIfUnreferenced(shard, member);
    }

    /**
     * entries.lua 'cancel' in one shard: the hot copy when there is one (its payload when unreferenced), otherwise
     * the cold one (its member index field).
     */
    boolean opsCancel(int s, String member) {
        if (cancelHotIn(s, member)) {
            cancelled++;
            return true;
        }
        if (shard(s).cold.remove(member) != null) {
            cancelled++;
            ContractWorld.covered("cold entries cancelled by the operator");
            return true;
        }
        return false;
    }

    /**
     * entries.lua 'now' in one shard: a hot entry is moved to now; a cold one gets {@code <block>:<now>} in the
     * member index and its block's score is lowered to now, so the mover brings it back at once.
     */
    boolean deliverNow(int s, String member) {
        Shard shard = shard(s);
        if (shard.scheduled.containsKey(member)) {
            shard.scheduled.put(member, now);
            return true;
        }
        Cold c = shard.cold.get(member);
        if (c == null) {
            return false;
        }
        shard.cold.put(member, new Cold(c.block(), now, c.payload(), true));
        Block block = shard.blocks.get(c.block());
        block.score = Math.min(block.score, now);
        ContractWorld.covered("cold entries delivered now by the operator");
        return true;
    }

    /** A dead letter where it lives. */
    record DeadLetter(int shard, String member, long diedAt, String reason) {}

    /** Every dead letter over the first {@code width} shards, oldest first. */
    List<DeadLetter> deadLetters(int width) {
        List<DeadLetter> all = new ArrayList<>();
        for (int s = 0; s < width; s++) {
            int shard = s;
            shard(s).dead.forEach((m, d) -> all.add(new DeadLetter(shard, m, d.diedAt(), d.reason())));
        }
        all.sort(DEAD_ORDER);
        return all;
    }

    static final Comparator<DeadLetter> DEAD_ORDER = Comparator.comparingLong(DeadLetter::diedAt)
            .thenComparing(DeadLetter::member)
            .thenComparingInt(DeadLetter::shard);

    // ---- the cold tier (docs/cold-tier.md) ----

    /**
     * cold-pick.lua: the entries of the shard due after now + cold-after and neither in flight nor dead, earliest
     * first (ties by member, as ZRANGEBYSCORE orders them), with their payloads.
     */
    List<ColdEntry> coldPick(int s, long coldAfterMs) {
        Shard shard = shard(s);
        return shard.scheduled.entrySet().stream()
                .filter(e -> e.getValue() > now + coldAfterMs
                        && !shard.flights.containsKey(e.getKey())
                        && !shard.dead.containsKey(e.getKey()))
                .sorted(Map.Entry.<String, Long>comparingByValue().thenComparing(Map.Entry::getKey))
                .map(e -> new ColdEntry(e.getKey(), e.getValue(), shard.payloads.get(e.getKey())))
                .toList();
    }

    /**
     * cold-demote.lua: each listed entry still exactly as listed (same due, same payload or still none, not in
     * flight, not dead) leaves K:i and the payloads and becomes live in a new block; the block (all listed entries)
     * is stored only when at least one moved, with the earliest moved due as its score. Returns {moved, block id}.
     */
    long[] coldDemote(int s, List<ColdEntry> listed) {
        Shard shard = shard(s);
        long id = shard.seq + 1;
        int moved = 0;
        long earliest = Long.MAX_VALUE;
        for (ColdEntry e : listed) {
            Long due = shard.scheduled.get(e.member());
            if (due != null
                    && due == e.due()
                    && !shard.flights.containsKey(e.member())
                    && !shard.dead.containsKey(e.member())
                    && java.util.Objects.equals(shard.payloads.get(e.member()), e.payload())) {
                shard.scheduled.remove(e.member());
                shard.payloads.remove(e.member());
                if (shard.cold.put(e.member(), new Cold(id, e.due(), e.payload(), false)) != null) {
                    // a raw ZADD's hot copy of a cold member: the index now points at the new block, the old copy ends
                    replaced++;
                    ContractWorld.covered("cold members demoted again (a raw ZADD's copy replaces the cold one)");
                }
                moved++;
                earliest = Math.min(earliest, e.due());
            }
        }
        if (moved == 0) {
            return new long[] {0, 0};
        }
        shard.seq = id;
        shard.coldTier = true;
        shard.blocks.put(id, new Block(earliest, List.copyOf(listed)));
        return new long[] {moved, id};
    }

    /** cold-due.lua: ids of the blocks whose score is at most now + lead, by score then id (as text), at most limit. */
    List<String> coldDue(int s, long leadMs, int limit) {
        return shard(s).blocks.entrySet().stream()
                .filter(e -> e.getValue().score <= now + leadMs)
                .sorted(Comparator.comparingLong((Map.Entry<Long, Block> e) -> e.getValue().score)
                        .thenComparing(e -> Long.toString(e.getKey())))
                .limit(limit)
                .map(e -> Long.toString(e.getKey()))
                .toList();
    }

    /**
     * cold-promote.lua: a block gone answers {-1, 0}; otherwise each entry the index points at this block leaves the
     * index and comes back to K:i (at its rescheduled time) unless the member is scheduled hot already (a raw ZADD's
     * copy: the cold one ends), and the block is deleted. Returns {back, skipped}.
     */
    int[] coldPromote(int s, long id) {
        Shard shard = shard(s);
        Block block = shard.blocks.remove(id);
        if (block == null) {
            return new int[] {-1, 0};
        }
        int back = 0;
        int skipped = 0;
        for (ColdEntry e : block.entries) {
            Cold c = shard.cold.get(e.member());
            if (c == null || c.block() != id) {
                skipped++;
                continue;
            }
            shard.cold.remove(e.member());
            if (shard.scheduled.containsKey(e.member())) {
                replaced++;
                skipped++;
                continue;
            }
            shard.scheduled.put(e.member(), c.due());
            if (e.payload() != null) {
                shard.payloads.put(e.member(), e.payload());
            }
            back++;
        }
        if (shard.blocks.isEmpty()) {
            // the shard's last block: the fan-out and rule are cleared, the next demotion records them anew
            shard.coldTier = false;
            ContractWorld.covered("cold tiers emptied (cold-meta keeps only seq)");
        }
        return new int[] {back, skipped};
    }

    // ---- totals and laws ----

    private long sum(ToLongFunction<Shard> size) {
        return shards.values().stream().mapToLong(size).sum();
    }

    long scheduledTotal() {
        return sum(s -> s.scheduled.size());
    }

    long dueTotal() {
        return sum(s -> s.scheduled.values().stream().filter(due -> due <= now).count());
    }

    long flightTotal() {
        return sum(s -> s.flights.size());
    }

    long deadTotal() {
        return sum(s -> s.dead.size());
    }

    /** Live cold entries of the first {@code width} shards. */
    long coldTotal(int width) {
        long n = 0;
        for (int s = 0; s < width; s++) {
            n += shard(s).cold.size();
        }
        return n;
    }

    /**
     * The model's own laws, whatever Redis says: every copy ever scheduled is live or ended in exactly one way, and a
     * payload exists exactly while its id is scheduled, in flight or dead in its shard.
     */
    void checkLaws() {
        long live = scheduledTotal() + flightTotal() + deadTotal() + coldTotal(MAX_SHARDS);
        long ended = replaced + cancelled + delivered + deadSuperseded + trimmed + purged + dropped;
        if (created != live + ended) {
            throw new AssertionError("ledger: " + created + " scheduled, " + live + " live + " + ended + " ended");
        }
        for (Map.Entry<Integer, Shard> e : shards.entrySet()) {
            Shard shard = e.getValue();
            Set<String> referenced = new TreeSet<>();
            referenced.addAll(shard.scheduled.keySet());
            referenced.addAll(shard.flights.keySet());
            referenced.addAll(shard.dead.keySet());
            referenced.removeIf(m -> !m.startsWith(ContractWorld.ID_PREFIX));
            if (!referenced.equals(shard.payloads.keySet())) {
                throw new AssertionError("shard " + e.getKey() + ": payloads " + shard.payloads.keySet()
                        + " but ids referring to one " + referenced);
            }
            for (Map.Entry<String, Cold> c : shard.cold.entrySet()) {
                Block block = shard.blocks.get(c.getValue().block());
                if (block == null
                        || block.entries.stream().noneMatch(x -> x.member().equals(c.getKey()))
                        || block.score > c.getValue().due()) {
                    throw new AssertionError("shard " + e.getKey() + ": cold " + c.getKey() + " " + c.getValue()
                            + " is not in a block that comes back by its due time");
                }
                if (c.getKey().startsWith(ContractWorld.ID_PREFIX)
                        && (shard.scheduled.containsKey(c.getKey()) || shard.flights.containsKey(c.getKey()))) {
                    throw new AssertionError("shard " + e.getKey() + ": id " + c.getKey() + " is cold and hot");
                }
            }
        }
    }

    private static int utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
