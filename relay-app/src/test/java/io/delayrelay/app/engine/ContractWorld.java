package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.ContractModel.DeadLetter;
import io.delayrelay.app.engine.ContractModel.Finding;
import io.delayrelay.app.engine.ContractModel.Flight;
import io.delayrelay.app.engine.ContractModel.PopExpectation;
import io.delayrelay.app.engine.ContractModel.Popped;
import io.delayrelay.app.engine.ContractModel.Requeued;
import io.delayrelay.app.engine.ContractModel.Settings;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.fleet.OperatorPause;
import io.delayrelay.app.fleet.OperatorPauseStore;
import io.delayrelay.app.metrics.Backlog;
import io.delayrelay.app.metrics.BacklogReader;
import io.delayrelay.app.ops.DeadLetters;
import io.delayrelay.app.ops.DeadSetTrimmer;
import io.delayrelay.app.ops.ScheduledEntries;
import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.RedisTemplate;

/**
 * One business on the real Redis next to its {@link ContractModel}: every action runs on the production code
 * (the producer, two relay instances' {@link ShardStore}s and {@link BusinessRelay}s with their topology keepers
 * and lease reaper, the ops classes) over the real Lua scripts with a pinned clock, and on the model; its answers
 * are compared at once, and {@link #check()} compares every key of the business with the model after each step.
 *
 * <p>One class on purpose, though long: each action is the pair "run it on the production code, run it on the model,
 * compare the answers", and reading a pair in one place is what makes a failure explainable.
 */
final class ContractWorld {

    static final String ID_PREFIX = "id";
    static final String MESSAGE_PREFIX = "m";
    /** Ids and messages each: few, so that members meet again (re-scheduled while in flight, dead twice). */
    static final int MEMBERS = 5;

    private static final int INSTANCES = 2;
    private static final int KEPT_LEASES = 8;

    /** What every world shares: the server, the pinned clock and the stateless production objects. */
    record Shared(
            PinnedClockRedis clock,
            RedisConnectionFactory raw,
            ShardStore[] stores,
            RedisDelayedMessageProducer producer,
            DeadLetters deadLetters,
            ScheduledEntries entries,
            DeadSetTrimmer trimmer,
            OperatorPauseStore pauses,
            BacklogReader backlog,
            ColdStore cold) {

        static Shared on(RedisConnectionFactory raw) {
            PinnedClockRedis clock = new PinnedClockRedis(raw);
            RedisConnectionFactory pinned = clock.factory();
            RedisTemplate<byte[], byte[]> template = ByteRedisTemplates.create(pinned);
            ShardStore[] stores = new ShardStore[INSTANCES];
            for (int i = 0; i < INSTANCES; i++) {
                stores[i] = new ShardStore(pinned);
            }
            return new Shared(
                    clock,
                    raw,
                    stores,
                    new RedisDelayedMessageProducer(pinned, 1, Duration.ZERO, DelayQueueKeys::forBusiness),
                    new DeadLetters(template),
                    new ScheduledEntries(template),
                    new DeadSetTrimmer(null, template, RelayEvents.NOOP, Duration.ofHours(1)),
                    new OperatorPauseStore(template),
                    new BacklogReader(template),
                    // slices of 2 entries: the model's small blocks still move in several script calls each
                    new ColdStore(template, 2));
        }
    }

    /** A pop's entries, as the relay keeps them until it settles the batch. */
    record Lease(int instance, int shard, String token, List<String> members, boolean anyPayload) {}

    /** How often each interesting situation came up over the run (printed at the end: what the sequences reached). */
    static final Map<String, AtomicLong> COVERAGE = new ConcurrentSkipListMap<>();

    static void covered(String situation) {
        COVERAGE.computeIfAbsent(situation, k -> new AtomicLong()).incrementAndGet();
    }

    final ContractModel model;
    final Shared shared;
    final String business;
    final DelayQueueKeys keys;
    private final BusinessRelay[] relays = new BusinessRelay[INSTANCES];
    private final TopologyKeeper[] keepers = new TopologyKeeper[INSTANCES];
    private final LeaseReaper[] reapers = new LeaseReaper[INSTANCES];
    final List<Lease> leases = new ArrayList<>();
    /** The cold tier's two movers (instance i's mover moves the shards of instance i's scan width). */
    final ColdMovers movers;

    private int payloads;
    int steps;

    ContractWorld(Shared shared, String business, Settings settings, long startMs, int shards) {
        this.shared = shared;
        this.business = business;
        this.keys = DelayQueueKeys.forBusiness(business);
        this.model = new ContractModel(settings, startMs, shards);
        shared.clock().setNow(startMs);
        EventReporter events = new EventReporter(RelayEvents.NOOP);
        for (int i = 0; i < INSTANCES; i++) {
            BusinessRelay relay = new BusinessRelay(
                    spec(shards), shared.stores()[i], null, events, new RedisClock(), ShardDivision.none());
            relay.adoptTopology(0);
            relays[i] = relay;
            keepers[i] = new TopologyKeeper(() -> List.of(relay), Duration.ZERO, System::nanoTime, events, 0);
            reapers[i] = new LeaseReaper(shared.stores()[i], events);
        }
        this.movers = new ColdMovers(this, shared.cold());
    }

    BusinessSpec spec(int shards) {
        return spec(shards, 10_000, Duration.ofDays(180));
    }

    /**
     * The business's settings with a shard count and dead-set bounds. The model's byte budgets go below what
     * configuration accepts (a pop always takes one entry), so the batch is set past the builder's validation.
     */
    BusinessSpec spec(int shards, int deadMaxSize, Duration deadMaxAge) {
        Settings s = model.settings;
        BusinessSpec valid = BusinessSpec.builder(business, DelayQueueKeys.forBusiness(business))
                .shards(shards)
                .threads(1)
                .threadNamePrefix("model-" + business + "-")
                .exchange("unused-exchange", "direct", false)
                .routingKey("rk")
                .batchSize(s.batch())
                .lease(Duration.ofMillis(s.leaseMs()))
                .maxAttempts(s.maxAttempts())
                .retryDelay(Duration.ofMillis(s.retryMs()), Duration.ofMillis(s.retryMaxMs()))
                .publishTimeout(Duration.ofSeconds(5))
                .deadBounds(deadMaxSize, deadMaxAge)
                .maxLateness(s.maxLatenessMs() < 0 ? null : Duration.ofMillis(s.maxLatenessMs()))
                .dropLate(s.dropLate())
                .build();
        return new BusinessSpec(
                valid.name(),
                valid.keys(),
                valid.shards(),
                valid.threads(),
                valid.threadNamePrefix(),
                valid.route(),
                new BusinessSpec.Batch(s.batch(), s.batchBytes()),
                valid.timing(),
                valid.retry(),
                valid.deadSet(),
                valid.late(),
                valid.maxRate(),
                valid.slo(),
                valid.coldAfter(),
                valid.messageShape(),
                valid.outgoing(),
                valid.paused());
    }

    int scanWidth(int instance) {
        return relays[instance].state().scanWidth();
    }

    /** The width the ops endpoint passes to the dead-letter and entry operations: the relay's scan width. */
    int opsWidth() {
        return relays[0].state().scanWidth();
    }

    // ---- producers ----

    void scheduleById(int index, long delayMs, boolean after) {
        String id = ID_PREFIX + index;
        String payload = "p" + (++payloads) + "-" + "x".repeat((int) (payloads % 7) * 4);
        long expected = model.now + delayMs;
        long due = after
                ? shared.producer().scheduleByIdAfter(business, id, bytes(payload), Duration.ofMillis(delayMs))
                : shared.producer().scheduleById(business, id, bytes(payload), Instant.ofEpochMilli(expected));
        same("due time of schedule.lua", expected, due);
        model.schedule(id, due, payload);
    }

    void scheduleMessage(int index, long delayMs) {
        String message = MESSAGE_PREFIX + index;
        long due = shared.producer().schedule(business, bytes(message), Instant.ofEpochMilli(model.now + delayMs));
        same("due time of schedule.lua", model.now + delayMs, due);
        model.schedule(message, due, null);
    }

    /**
     * Producers schedule again every member whose delivery is unsettled (the review's trigger of finding 1: a nack
     * storm, and producers re-scheduling the same members): each new schedule waits behind its member's delivery.
     */
    void scheduleAgainWhileInFlight(long delayMs) {
        Set<String> members = new TreeSet<>();
        model.shards.values().forEach(shard -> members.addAll(shard.flights.keySet()));
        for (String m : members) {
            int index = Integer.parseInt(
                    m.substring(m.startsWith(ID_PREFIX) ? ID_PREFIX.length() : MESSAGE_PREFIX.length()));
            if (m.startsWith(ID_PREFIX)) {
                scheduleById(index, delayMs, false);
            } else {
                scheduleMessage(index, delayMs);
            }
        }
    }

    void plainZadd(int index, long delayMs) {
        String message = MESSAGE_PREFIX + index;
        int shard = ContractModel.shardOf(message, model.metaShards);
        try (RedisConnection c = shared.raw().getConnection()) {
            c.zSetCommands().zAdd(bytes(keys.shard(shard)), model.now + delayMs, bytes(message));
        }
        model.plainZadd(message, model.now + delayMs);
    }

    void reschedule(String member, long delayMs) {
        Instant due = Instant.ofEpochMilli(model.now + delayMs);
        boolean moved = member.startsWith(ID_PREFIX)
                ? shared.producer().rescheduleById(business, member, due)
                : shared.producer().reschedule(business, bytes(member), due);
        same("reschedule of " + member, model.reschedule(member, model.now + delayMs), moved);
    }

    void cancel(String member) {
        boolean removed = member.startsWith(ID_PREFIX)
                ? shared.producer().cancelById(business, member)
                : shared.producer().cancel(business, bytes(member));
        same("cancel of " + member, model.cancel(member), removed);
    }

    // ---- relay instances ----

    void pop(int instance, int pick, boolean knownDue) {
        pop(instance, pick, knownDue, 0);
    }

    /** A pop of one shard with pop.lua's lead ({@code lead} ms; 0: none). */
    void pop(int instance, int pick, boolean knownDue, long lead) {
        if (model.paused) {
            return; // the relay does not pop while an operator paused the business
        }
        int shard = pick % scanWidth(instance);
        BusinessSpec spec = relays[instance].spec();
        PopResult result = shared.stores()[instance]
                .pop(spec, Round.of(shard, knownDue, spec.batch().size(), lead), List.of())
                .single();
        model.popLead = lead;
        try {
            checkPop(instance, shard, knownDue, result, "pop of shard " + shard + " (lead " + lead + ")");
        } finally {
            model.popLead = 0;
        }
    }

    /**
     * Checks what a pop of {@code shard} returned against the model and applies it (the model's batch size and byte
     * budget are the pop's: see {@link ContractModel#limitPop}); returns how many candidates it took (handed out,
     * late, or left out by the byte budget: what counts towards the batch size).
     */
    private int checkPop(int instance, int shard, boolean knownDue, PopResult result, String label) {
        PopExpectation expected = model.expectPop(shard, knownDue);
        // the late policy: among the batch's candidates, the late ones are not handed out (dead or dropped)
        List<Popped> candidates = expected.eligible()
                .subList(0, Math.min(model.popBatch(), expected.eligible().size()));
        List<Popped> wantedLate = candidates.stream().filter(model::isLate).toList();
        List<Popped> deliverable =
                candidates.stream().filter(p -> !model.isLate(p)).toList();
        List<Popped> wanted = deliverable.subList(0, model.popCount(deliverable));
        List<Popped> got = result.entries().stream()
                .map(e -> new Popped(text(e.member()), e.dueAtMs(), text(e.payload()), e.attempts()))
                .toList();
        String where = label + " by instance " + instance + " at " + model.now;
        List<String> gotLate = result.late().stream().map(l -> text(l.member())).toList();
        if (!gotLate.equals(wantedLate.stream().map(Popped::member).toList())) {
            throw new AssertionError(where + ": late entries expected " + wantedLate + " but got " + gotLate
                    + " (shard: " + describe(shard) + ")");
        }
        for (int i = 0; i < wantedLate.size(); i++) {
            same(
                    where + ": original due of late " + gotLate.get(i),
                    wantedLate.get(i).origin(),
                    result.late().get(i).dueAtMs());
        }

        for (Popped p : got) {
            Long due = model.shard(shard).scheduled.get(p.member());
            Flight flight = model.shard(shard).flights.get(p.member());
            boolean dueRetry = flight != null && !flight.leased() && flight.score() <= model.now;
            // a schedule is handed out by its due time, or within the pop's lead of it (pop-ahead: the worker
            // publishes it at its due time, the reply's due)
            if (!dueRetry && (due == null || due > model.now + model.popLead)) {
                throw new AssertionError(where + ": " + p.member() + " handed out before it was due (scheduled " + due
                        + ", in flight " + flight + ", lead " + model.popLead + ")");
            }
            if (!dueRetry && due > model.now) {
                same(where + ": due of " + p.member() + " taken ahead", due, p.origin());
                covered("pops taking schedules ahead (lead)");
            }
        }
        boolean tolerated = false;
        boolean pageLimit = model.pageLimitHides(shard, expected);
        if (!got.equals(wanted)) {
            boolean prefix = pageLimit
                    && got.size() < wanted.size()
                    && wanted.subList(0, got.size()).equals(got);
            if (prefix && Finding.HEAD_OF_LINE_BLOCKING.tolerated()) {
                covered("tolerated finding 1: a pop took fewer due entries than it could");
                tolerated = true;
            } else {
                String what = where + ": expected " + wanted + " but got " + got + " (shard: " + describe(shard) + ")";
                throw new AssertionError(prefix ? Finding.HEAD_OF_LINE_BLOCKING.says(what) : what);
            }
        }
        same(where + ": expired leases seen", expected.expired(), result.expiredLeases());
        same(where + ": Redis time", expected.now(), result.redisNowMs());
        if (!got.isEmpty()) {
            covered("pops handing out entries");
        }
        if (expected.eligible().size() > got.size() && got.size() == model.popBatch()) {
            covered("pops leaving due entries for the next pop");
        }
        if (model.shard(shard).scheduled.entrySet().stream()
                .anyMatch(e ->
                        e.getValue() <= model.now && model.shard(shard).flights.containsKey(e.getKey()))) {
            covered("pops passing a due schedule held back by its member's delivery");
        }
        model.applyLate(shard, wantedLate);
        model.applyPop(shard, result.token(), got);
        if (pageLimit && Finding.HEAD_OF_LINE_BLOCKING.tolerated()) {
            // the pop never saw the schedule behind the blocked pages, so its nextDue may be the 50 ms recheck
            if (!tolerated) {
                covered("tolerated finding 1: a pop took fewer due entries than it could");
            }
            tolerated = true;
        }
        if (!tolerated && !wantedLate.isEmpty()) {
            same(where + ": nextDue after late entries (more may be due)", model.now, result.nextDueMs());
        } else if (!tolerated) {
            try {
                checkNextDue(where, shard, knownDue, expected, got.size(), result.nextDueMs());
            } catch (AssertionError e) {
                throw pageLimit ? new AssertionError(Finding.HEAD_OF_LINE_BLOCKING.says(e.getMessage())) : e;
            }
        }
        if (!got.isEmpty()) {
            leases.add(new Lease(
                    instance,
                    shard,
                    result.token(),
                    got.stream().map(Popped::member).toList(),
                    got.stream().anyMatch(p -> p.payload() != null)));
            if (leases.size() > KEPT_LEASES) {
                leases.remove(0);
            }
        }
        if (result.expiredLeases() > 0) {
            // the worker takes them back at once
            reap(instance, shard);
        }
        return expected.nothingDue() ? 0 : candidates.size();
    }

    /**
     * One pop of several shards in one pop.lua call ({@link ShardStore#pop}), as a worker pops the shards it
     * found due within its linger: each shard must be served exactly as a pop of that shard alone at the same
     * instant, with the batch size and byte budget the shards before it left (one entry always taken only while
     * nothing was taken before it), under one lease token; a shard reached with nothing left is not looked at,
     * not even probed (next due -2), and stays as it was.
     */
    void popMany(int instance, List<Integer> picks, List<Boolean> knownFlags) {
        popCarrying(instance, picks, knownFlags, List.of(), 0);
    }

    /** Like {@link #popCarrying(int, List, List, List, int)}, with pop.lua's lead ({@code lead} ms; 0: none). */
    void popCarrying(
            int instance, List<Integer> picks, List<Boolean> knownFlags, List<Integer> ackPicks, int mask, long lead) {
        model.popLead = lead;
        try {
            popCarrying(instance, picks, knownFlags, ackPicks, mask, lead, true);
        } finally {
            model.popLead = 0;
        }
    }

    /**
     * A pop of one or several shards that carries acks of earlier rounds ({@link ShardStore#pop} with acks, as
     * {@link AckCarrier} sends the confirmed entries waiting for the worker's next pop): the acks are settled first,
     * each exactly as ack.lua would (only members still leased under its token: a lease the reaper took back, one
     * settled already, or a member leased again since is left alone), then the shards are popped as {@link #popMany}
     * pops them, so a member settled by the call and scheduled again may be handed out by it. Only the pop's own
     * instance's leases are carried (one instance's settler acks its own).
     */
    void popCarrying(int instance, List<Integer> picks, List<Boolean> knownFlags, List<Integer> ackPicks, int mask) {
        popCarrying(instance, picks, knownFlags, ackPicks, mask, 0, true);
    }

    private void popCarrying(
            int instance,
            List<Integer> picks,
            List<Boolean> knownFlags,
            List<Integer> ackPicks,
            int mask,
            long lead,
            boolean unused) {
        if (model.paused) {
            return;
        }
        List<ShardStore.Ack> acks = new ArrayList<>();
        long expectedSettled = 0;
        int asked = 0;
        for (int pick : ackPicks) {
            Lease lease = lease(pick);
            if (lease == null || lease.instance() != instance) {
                continue;
            }
            List<String> members = members(lease, mask);
            asked += members.size();
            expectedSettled += model.ack(lease.shard(), lease.token(), members);
            acks.add(new ShardStore.Ack(lease.shard(), lease.token(), bytes(members), lease.anyPayload()));
        }
        int width = scanWidth(instance);
        List<Integer> order = new ArrayList<>();
        List<Boolean> flags = new ArrayList<>();
        for (int i = 0; i < picks.size(); i++) {
            int shard = picks.get(i) % width;
            if (!order.contains(shard)) {
                order.add(shard);
                flags.add(knownFlags.get(i % knownFlags.size()));
            }
        }
        int[] shards = order.stream().mapToInt(Integer::intValue).toArray();
        boolean[] known = new boolean[shards.length];
        for (int i = 0; i < known.length; i++) {
            known[i] = flags.get(i);
        }
        BusinessSpec spec = relays[instance].spec();
        List<PopResult> results;
        if (acks.isEmpty()) {
            results = shared.stores()[instance]
                    .pop(spec, Round.of(shards, known, lead), List.of())
                    .results();
        } else {
            ShardStore.Popped carried = shared.stores()[instance].pop(spec, Round.of(shards, known, lead), acks);
            covered("pops carrying acks");
            if (expectedSettled < asked) {
                covered("carried acks of leases taken back, settled already or leased again");
            }
            same("carried acks that failed " + carried.errors(), 0L, (long)
                    carried.failed().size());
            same(
                    "members settled by the carried acks of " + acks.size() + " lease(s)",
                    expectedSettled,
                    carried.settled());
            results = carried.results();
        }
        same("shards answered by a pop of " + order, shards.length, results.size());
        if (shards.length > 1) {
            covered("pops of several shards in one call");
            same(
                    "one lease token per call",
                    1L,
                    results.stream().map(PopResult::token).distinct().count());
        }
        int left = model.settings.batch();
        long budget = model.settings.batchBytes();
        int takenBefore = 0;
        for (int g = 0; g < shards.length; g++) {
            int shard = shards[g];
            PopResult result = results.get(g);
            String what = "shard " + shard + " (" + (g + 1) + " of " + order + ") of a pop of several";
            if (left <= 0 || budget < 0) {
                checkLeftOut(instance, shard, known[g], result, what);
                continue;
            }
            model.limitPop(left, budget, takenBefore == 0);
            int took;
            try {
                took = checkPop(instance, shard, known[g], result, what);
            } finally {
                model.unlimitPop();
            }
            if (shards.length > 1 && !result.entries().isEmpty()) {
                covered("pops of several shards handing out entries");
            }
            left -= took;
            takenBefore += result.entries().size();
            for (PopResult.Entry e : result.entries()) {
                budget -= e.member().length + (e.payload() == null ? 0 : e.payload().length);
            }
            if (budget <= 0) {
                budget = -1;
            }
        }
    }

    /** A shard of a pop of several reached with nothing of the call's batch or budget left: not looked at. */
    private void checkLeftOut(int instance, int shard, boolean knownDue, PopResult result, String what) {
        String where = what + " by instance " + instance + " at " + model.now + " (nothing left of the call, known due "
                + knownDue + ")";
        covered("shards of a pop of several left out (the call's batch used up)");
        same(where + ": entries", 0L, (long) result.entries().size());
        same(where + ": late", 0L, (long) result.late().size());
        same(where + ": left out, not even probed", PopResult.SKIPPED, result.nextDueMs());
        same(where + ": expired leases (not looked at)", 0L, (long) result.expiredLeases());
        same(where + ": Redis time (read for the shards before it)", model.now, result.redisNowMs());
    }

    /**
     * Acks of several leases in one ack.lua call ({@link ShardStore#ack}), as the settler acks the confirmed
     * entries of a pop of several shards: each settles only its members still leased under its token.
     */
    void ackMany(List<Integer> picks, int mask) {
        List<ShardStore.Ack> acks = new ArrayList<>();
        long expected = 0;
        int instance = -1;
        for (int pick : picks) {
            Lease lease = lease(pick);
            if (lease == null) {
                return;
            }
            if (instance >= 0 && lease.instance() != instance) {
                continue; // one instance's settler acks its own leases
            }
            instance = lease.instance();
            List<String> members = members(lease, mask);
            expected += model.ack(lease.shard(), lease.token(), members);
            acks.add(new ShardStore.Ack(lease.shard(), lease.token(), bytes(members), lease.anyPayload()));
        }
        if (acks.size() > 1) {
            covered("acks of several leases in one call");
        }
        long settled = shared.stores()[instance].ack(relays[instance].spec(), acks);
        same("acks of " + acks.size() + " leases in one call", expected, settled);
    }

    private void checkNextDue(
            String where, int shard, boolean knownDue, PopExpectation expected, int taken, long nextDue) {
        if (expected.emptyProbe()) {
            same(where + ": nextDue of an empty shard", -1L, nextDue);
            return;
        }
        if (!knownDue && expected.nothingDue()) {
            same(where + ": nextDue of a shard with nothing due", expected.earliest(), nextDue);
            return;
        }
        if (taken >= model.popBatch()
                || taken < Math.min(model.popBatch(), expected.eligible().size())) {
            same(where + ": nextDue of a full batch (more is due)", model.now, nextDue);
            return;
        }
        if (!model.shard(shard).holdsDeliveries()) {
            same(where + ": nextDue of a shard left empty", -1L, nextDue);
            return;
        }
        long latest = model.latestNextDue(shard);
        if (nextDue < 0 || nextDue > latest) {
            throw new AssertionError(where + ": nextDue " + nextDue + " but something can move at " + latest
                    + " (shard: " + describe(shard) + ")");
        }
    }

    Lease lease(int pick) {
        return leases.isEmpty() ? null : leases.get(pick % leases.size());
    }

    /** The members of the lease the mask picks (bit i: member i); no bit picks all of them. */
    static List<String> members(Lease lease, int mask) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < lease.members().size(); i++) {
            if ((mask & (1 << i)) != 0) {
                out.add(lease.members().get(i));
            }
        }
        return out.isEmpty() ? lease.members() : out;
    }

    void ack(int pick, int mask) {
        Lease lease = lease(pick);
        if (lease == null) {
            return;
        }
        List<String> members = members(lease, mask);
        long expected = model.ack(lease.shard(), lease.token(), members);
        if (expected < members.size()) {
            covered("acks of leases taken back or settled already");
        }
        long settled = shared.stores()[lease.instance()].ack(
                spec(lease),
                List.of(new ShardStore.Ack(lease.shard(), lease.token(), bytes(members), lease.anyPayload())));
        same("ack of " + members + " under " + lease.token(), expected, settled);
    }

    /** The outcomes of a published batch that are not a confirm: each as BatchSettler settles it. */
    enum Failure {
        NACK,
        CONFIRM_TIMEOUT,
        RETURNED,
        NOT_SENT
    }

    void fail(int pick, int mask, Failure failure) {
        Lease lease = lease(pick);
        if (lease == null) {
            return;
        }
        List<String> members = members(lease, mask);
        ShardStore store = shared.stores()[lease.instance()];
        BusinessSpec spec = spec(lease);
        String where = failure + " of " + members + " under " + lease.token();
        switch (failure) {
            case NOT_SENT -> {
                store.release(spec, lease.shard(), lease.token(), bytes(members));
                model.requeue(
                        lease.shard(), lease.token(), members, spec.retry().maxAttempts(), "not sent", true);
            }
            case RETURNED -> requeued(
                    where,
                    model.requeue(lease.shard(), lease.token(), members, 1, "unroutable", false),
                    store.requeue(spec, lease.shard(), lease.token(), bytes(members), 1, "unroutable"));
            default -> {
                String reason = failure == Failure.NACK ? "nack" : "confirm timeout";
                requeued(
                        where,
                        model.requeue(
                                lease.shard(),
                                lease.token(),
                                members,
                                spec.retry().maxAttempts(),
                                reason,
                                false),
                        store.requeue(
                                spec,
                                lease.shard(),
                                lease.token(),
                                bytes(members),
                                spec.retry().maxAttempts(),
                                reason));
            }
        }
    }

    private static void requeued(String where, Requeued expected, ShardStore.RequeueResult actual) {
        same(where + ": retried", expected.requeued(), actual.requeued());
        same(
                where + ": died",
                expected.dead(),
                actual.dead().stream().map(ContractWorld::text).toList());
    }

    void reap(int instance, int shard) {
        reapers[instance].reap(relays[instance].state(), shard);
        Requeued taken = model.requeueExpired(shard, "lease expired");
        if (taken.requeued() + taken.dead().size() > 0) {
            covered("expired leases taken back");
        }
    }

    void advance(long ms) {
        model.now += ms;
        shared.clock().setNow(model.now);
    }

    // ---- shard counts ----

    void reshard(int count) {
        covered(
                count < model.metaShards
                        ? "reshards down"
                        : count > model.metaShards ? "reshards up" : "reshards to the same count");
        for (BusinessRelay relay : relays) {
            relay.update(spec(count), 0);
        }
        model.reshard(count);
    }

    /** Both instances' topology keepers look twice (their grace is zero): drained counts retire. */
    void retire() {
        List<Integer> before = List.copyOf(model.draining);
        for (TopologyKeeper keeper : keepers) {
            keeper.run();
            keeper.run();
        }
        List<Integer> after = ints(meta().get(MetaFields.DRAINING));
        for (int count : before) {
            boolean mayGo = count <= model.metaShards || model.drained(count);
            boolean mustGo = count <= model.metaShards || model.empty(count);
            if (!after.contains(count) && !mayGo) {
                throw new AssertionError("shard count " + count + " retired while its shards beyond " + model.metaShards
                        + " still hold deliveries: " + describeAll());
            }
            if (after.contains(count) && mustGo) {
                throw new AssertionError("shard count " + count + " kept draining though its shards beyond "
                        + model.metaShards + " are empty");
            }
        }
        if (after.size() < before.size()) {
            covered("shard counts retired");
            for (int s = model.metaShards; s < ContractModel.MAX_SHARDS; s++) {
                if (!model.shard(s).dead.isEmpty()) {
                    covered("shard counts retired with dead letters beyond the count in force");
                    break;
                }
            }
        }
        model.draining = new ArrayList<>(after);
    }

    // ---- operators ----

    void replay(int kind, String member, int limit) {
        int width = opsWidth();
        int reach = model.opsShards(width);
        BusinessSpec spec = relays[0].spec();
        long expected = 0;
        long done;
        switch (kind) {
            case 0 -> {
                for (int s = 0; s < reach; s++) {
                    expected += model.replay(s, member) ? 1 : 0;
                }
                done = shared.deadLetters().replay(spec, width, member);
            }
            case 1 -> {
                for (DeadLetter d : model.deadLetters(reach)) {
                    expected += model.replay(d.shard(), d.member()) ? 1 : 0;
                }
                done = shared.deadLetters().replay(spec, width, (String) null);
            }
            default -> {
                for (DeadLetter d : oldest(reach, limit)) {
                    expected += model.replay(d.shard(), d.member()) ? 1 : 0;
                }
                done = shared.deadLetters().replayOldest(spec, width, limit);
            }
        }
        same("replay (" + kind + ", " + member + ", " + limit + ") over " + width + " shards", expected, done);
    }

    void purge(int kind, String member, int limit) {
        int width = opsWidth();
        int reach = model.opsShards(width);
        BusinessSpec spec = relays[0].spec();
        long expected = 0;
        long done;
        switch (kind) {
            case 0 -> {
                for (int s = 0; s < reach; s++) {
                    expected += model.purge(s, member) ? 1 : 0;
                }
                done = shared.deadLetters().purge(spec, width, member);
            }
            case 1 -> {
                for (DeadLetter d : model.deadLetters(reach)) {
                    expected += model.purge(d.shard(), d.member()) ? 1 : 0;
                }
                done = shared.deadLetters().purge(spec, width, (String) null);
            }
            default -> {
                for (DeadLetter d : oldest(reach, limit)) {
                    expected += model.purge(d.shard(), d.member()) ? 1 : 0;
                }
                done = shared.deadLetters().purgeOldest(spec, width, limit);
            }
        }
        same("purge (" + kind + ", " + member + ", " + limit + ") over " + width + " shards", expected, done);
    }

    private List<DeadLetter> oldest(int reach, int limit) {
        List<DeadLetter> all = model.deadLetters(reach);
        return List.copyOf(all.subList(0, Math.min(limit, all.size())));
    }

    void opsEntries(boolean cancel, String member) {
        int width = opsWidth();
        BusinessSpec spec = relays[0].spec();
        long expected = 0;
        for (int s = 0; s < ContractModel.MAX_SHARDS; s++) {
            expected += (cancel ? model.opsCancel(s, member) : model.deliverNow(s, member)) ? 1 : 0;
        }
        long done = cancel
                ? shared.entries().cancel(spec, width, List.of(member))
                : shared.entries().deliverNow(spec, width, List.of(member));
        same((cancel ? "ops cancel of " : "deliver now of ") + member, expected, done);
    }

    /** The dead-set trim with the given bounds: exactly the excess goes, oldest first. */
    void trim(int maxSize, long maxAgeMs) {
        int width = opsWidth();
        int reach = model.opsShards(width);
        long cutoff = model.now - maxAgeMs;
        List<DeadLetter> tooOld = model.deadLetters(reach).stream()
                .filter(d -> d.diedAt() <= cutoff)
                .toList();
        DeadSetTrimmer.Trimmed trimmed =
                shared.trimmer().trim(spec(relays[0].spec().shards(), maxSize, Duration.ofMillis(maxAgeMs)), width);
        tooOld.forEach(d -> model.trimDiedBy(d.shard(), d.member()));
        same(
                "dead letters trimmed for their age (max age " + maxAgeMs + " ms)",
                (long) tooOld.size(),
                trimmed.tooOld());
        List<DeadLetter> before = model.deadLetters(reach);
        int excess = Math.max(0, before.size() - maxSize);
        if (excess > 0) {
            covered("size trims with an excess");
            if (before.size() > excess
                    && before.get(excess - 1).diedAt() == before.get(excess).diedAt()) {
                covered("size trims whose cutoff is a tie");
            }
        }
        Set<String> kept = new HashSet<>();
        Map<Integer, Map<String, Double>> dead = new TreeMap<>();
        for (int s = 0; s < reach; s++) {
            Map<String, Double> set = zset(keys.dead(s));
            dead.put(s, set);
            int shard = s;
            set.keySet().forEach(m -> kept.add(shard + ":" + m));
        }
        List<DeadLetter> removed = before.stream()
                .filter(d -> !kept.contains(d.shard() + ":" + d.member()))
                .toList();
        String what = "size trim to " + maxSize + " of " + before + " removed " + removed;
        if (removed.size() != excess) {
            long cutoffTie =
                    excess == 0 ? Long.MIN_VALUE : before.get(excess - 1).diedAt();
            boolean ties = removed.size() > excess && removed.stream().allMatch(d -> d.diedAt() <= cutoffTie);
            if (!(ties && Finding.TRIM_REMOVES_TIES.tolerated())) {
                throw new AssertionError(ties ? Finding.TRIM_REMOVES_TIES.says(what) : what);
            }
            covered("tolerated finding 2: a size trim removed more than the excess (ties)");
        }
        long newestRemoved =
                removed.stream().mapToLong(DeadLetter::diedAt).max().orElse(Long.MIN_VALUE);
        for (DeadLetter d : before) {
            if (kept.contains(d.shard() + ":" + d.member()) && d.diedAt() < newestRemoved) {
                throw new AssertionError(what + ": kept " + d + ", older than a removed one");
            }
        }
        same("dead letters trimmed over the size bound", (long) removed.size(), trimmed.overSize());
        removed.forEach(d -> model.trimDiedBy(d.shard(), d.member()));
        if (model.deadLetters(reach).size() > maxSize) {
            throw new AssertionError(
                    "dead set over its bound " + maxSize + " after a trim: " + model.deadLetters(reach));
        }
    }

    void pause(boolean pause) {
        if (pause) {
            OperatorPause stored = shared.pauses().pause(keys, "model");
            same("pause time", model.now, stored.at());
        } else {
            shared.pauses().resume(keys);
        }
        model.paused = pause;
        same("operator pause read back", pause, shared.pauses().read(keys).paused());
    }

    /** What an operator sees: the dead-letter list, the backlog figures and the producer's count equal the model's. */
    void look() {
        int width = opsWidth();
        int reach = model.opsShards(width);
        List<DeadLetter> listed = shared.deadLetters().list(relays[0].spec(), width, 1000).stream()
                .map(d -> new DeadLetter(d.shard(), d.member(), d.deadAtMs(), d.reason()))
                .sorted(ContractModel.DEAD_ORDER)
                .toList();
        List<DeadLetter> expected = model.deadLetters(reach);
        if (!listed.equals(expected)) {
            String what = "dead letters listed over " + width + " shards " + listed + ", expected " + expected;
            throw new AssertionError(
                    listed.equals(model.deadLetters(width)) ? Finding.STRANDED_DEAD_LETTERS.says(what) : what);
        }
        Backlog b = shared.backlog().read(relays[0].spec(), width);
        same("backlog due", model.dueTotal(), b.due());
        same("backlog scheduled later", model.scheduledTotal() - model.dueTotal(), b.scheduled());
        same("backlog in flight", model.flightTotal(), b.inflight());
        same("backlog cold (live entries of the scanned shards)", model.coldTotal(width), b.cold());
        long dead = model.deadLetters(reach).size();
        if (dead != b.dead()) {
            String what = "backlog dead " + b.dead() + ", expected " + dead;
            throw new AssertionError(
                    b.dead() == model.deadLetters(width).size() ? Finding.STRANDED_DEAD_LETTERS.says(what) : what);
        }
        // relay-api's count(): the shard zsets and the cold tier's live entries of the scanned shards
        same(
                "producer count",
                model.scheduledTotal() + model.coldTotal(width),
                shared.producer().count(business));
    }

    // ---- the check after every step ----

    /** Every key of the business equals the model; the model keeps its laws; everything is reachable. */
    void check() {
        steps++;
        model.checkLaws();
        if (Boolean.getBoolean("model.selftest") && model.deadTotal() >= 2) {
            throw new AssertionError("self-test: two dead letters " + model.deadLetters(ContractModel.MAX_SHARDS));
        }
        List<Object> read = snapshot();
        for (int s = 0; s < ContractModel.MAX_SHARDS; s++) {
            ContractModel.Shard shard = model.shard(s);
            int base = s * 6;
            String where = "shard " + s + " after step " + steps + ": ";
            same(where + keys.shard(s), scores(shard.scheduled), scores(read.get(base)));
            same(
                    where + keys.inflight(s),
                    scores(shard.flights.entrySet().stream()
                            .collect(Collectors.toMap(
                                    Map.Entry::getKey, e -> e.getValue().score()))),
                    scores(read.get(base + 1)));
            same(
                    where + keys.attempts(s),
                    new TreeMap<>(shard.flights.entrySet().stream()
                            .collect(Collectors.toMap(
                                    Map.Entry::getKey, e -> e.getValue().record()))),
                    hash(read.get(base + 2)));
            same(
                    where + keys.dead(s),
                    scores(shard.dead.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue()
                            .diedAt()))),
                    scores(read.get(base + 3)));
            same(
                    where + keys.deadReasons(s),
                    new TreeMap<>(
                            shard.dead.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue()
                                    .reason()))),
                    hash(read.get(base + 4)));
            same(where + keys.payloads(s), new TreeMap<>(shard.payloads), hash(read.get(base + 5)));
        }
        movers.check("after step " + steps);
        Map<String, String> meta = hash(read.get(ContractModel.MAX_SHARDS * 6));
        same("K:meta shards", Integer.toString(model.metaShards), meta.get(MetaFields.SHARDS));
        same("K:meta draining", join(model.draining), meta.getOrDefault(MetaFields.DRAINING, ""));
        same("K:meta history", join(model.history), meta.getOrDefault(MetaFields.HISTORY, ""));
        same("K:meta operator pause", model.paused, "1".equals(meta.get(MetaFields.PAUSED)));
        for (int i = 0; i < INSTANCES; i++) {
            for (int s = scanWidth(i); s < ContractModel.MAX_SHARDS; s++) {
                if (model.shard(s).holdsWork()) {
                    throw new AssertionError("instance " + i + " scans " + scanWidth(i) + " shards, but shard " + s
                            + " holds deliveries or cold blocks nobody pops or moves: " + describe(s));
                }
            }
        }
        for (int s = opsWidth(); s < ContractModel.MAX_SHARDS; s++) {
            if (!model.shard(s).dead.isEmpty()) {
                if (Finding.STRANDED_DEAD_LETTERS.tolerated()) {
                    covered("tolerated finding 3: steps with dead letters beyond the ops width");
                    break;
                }
                throw new AssertionError(Finding.STRANDED_DEAD_LETTERS.says("shard " + s + " holds dead letters "
                        + model.shard(s).dead.keySet() + " beyond the ops width " + opsWidth()
                        + ": not listed, counted, replayed, purged or trimmed"));
            }
        }
    }

    /**
     * Every key of the business in one round trip: for each shard K:i, inflight, attempts, dead, dead-reasons and
     * payloads, then K:meta (a test-only script on the raw connection, not one of the contract's).
     */
    @SuppressWarnings("unchecked")
    private List<Object> snapshot() {
        List<byte[]> names = new ArrayList<>();
        for (int s = 0; s < ContractModel.MAX_SHARDS; s++) {
            names.add(bytes(keys.shard(s)));
            names.add(bytes(keys.inflight(s)));
            names.add(bytes(keys.attempts(s)));
            names.add(bytes(keys.dead(s)));
            names.add(bytes(keys.deadReasons(s)));
            names.add(bytes(keys.payloads(s)));
        }
        names.add(bytes(keys.meta()));
        try (RedisConnection c = shared.raw().getConnection()) {
            List<Object> raw =
                    c.scriptingCommands().eval(SNAPSHOT, ReturnType.MULTI, names.size(), names.toArray(new byte[0][]));
            List<Object> out = new ArrayList<>(raw.size());
            for (Object reply : raw) {
                List<byte[]> flat = (List<byte[]>) reply;
                Map<String, String> pairs = new TreeMap<>();
                for (int i = 0; i + 1 < flat.size(); i += 2) {
                    pairs.put(text(flat.get(i)), text(flat.get(i + 1)));
                }
                out.add(pairs);
            }
            return out;
        }
    }

    /** Reads each key as a flat list of pairs: zset member, score; hash field, value; nothing for a missing key. */
    private static final byte[] SNAPSHOT = bytes(
            """
            local out = {}
            for i, key in ipairs(KEYS) do
              local kind = redis.call('TYPE', key).ok
              if kind == 'zset' then
                out[i] = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
              elseif kind == 'hash' then
                out[i] = redis.call('HGETALL', key)
              else
                out[i] = {}
              end
            end
            return out
            """);

    /** Deletes every key of the business (a private server: nothing else lives there). */
    void delete() {
        try (RedisConnection c = shared.raw().getConnection()) {
            Set<byte[]> found = c.keyCommands().keys(bytes("*" + keys.sourceKey() + "*"));
            if (found != null && !found.isEmpty()) {
                c.keyCommands().del(found.toArray(new byte[0][]));
            }
        }
    }

    // ---- helpers ----

    private BusinessSpec spec(Lease lease) {
        return relays[lease.instance()].spec();
    }

    private Map<String, String> meta() {
        try (RedisConnection c = shared.raw().getConnection()) {
            Map<String, String> out = new TreeMap<>();
            c.hashCommands().hGetAll(bytes(keys.meta())).forEach((k, v) -> out.put(text(k), text(v)));
            return out;
        }
    }

    private Map<String, Double> zset(String key) {
        try (RedisConnection c = shared.raw().getConnection()) {
            Map<String, Double> out = new TreeMap<>();
            c.zSetCommands()
                    .zRangeWithScores(bytes(key), 0, -1)
                    .forEach(t -> out.put(text(t.getValue()), t.getScore()));
            return out;
        }
    }

    String describe(int s) {
        ContractModel.Shard shard = model.shard(s);
        return "scheduled " + shard.scheduled + ", in flight " + shard.flights + ", dead " + shard.dead.keySet()
                + (shard.cold.isEmpty() ? "" : ", cold " + shard.cold)
                + (shard.blocks.isEmpty() ? "" : ", blocks " + shard.blocks.keySet());
    }

    private String describeAll() {
        StringBuilder out = new StringBuilder();
        for (int s = 0; s < ContractModel.MAX_SHARDS; s++) {
            out.append("\n  shard ").append(s).append(": ").append(describe(s));
        }
        return out.toString();
    }

    private static TreeMap<String, Long> scores(Map<String, Long> map) {
        return new TreeMap<>(map);
    }

    @SuppressWarnings("unchecked")
    private static TreeMap<String, Long> scores(Object pairs) {
        TreeMap<String, Long> out = new TreeMap<>();
        ((Map<String, String>) pairs).forEach((m, score) -> out.put(m, Long.parseLong(score)));
        return out;
    }

    @SuppressWarnings("unchecked")
    private static TreeMap<String, String> hash(Object pairs) {
        return new TreeMap<>((Map<String, String>) pairs);
    }

    private static List<Integer> ints(String list) {
        List<Integer> out = new ArrayList<>();
        if (list != null && !list.isBlank()) {
            for (String v : list.split(",")) {
                out.add(Integer.parseInt(v.trim()));
            }
        }
        return out;
    }

    private static String join(List<Integer> list) {
        return list.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    static void same(String what, Object expected, Object actual) {
        if (!expected.equals(actual)) {
            throw new AssertionError(what + ": expected " + expected + " but was " + actual);
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static List<byte[]> bytes(List<String> members) {
        return members.stream().map(ContractWorld::bytes).toList();
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return business + " at " + model.now + ":" + describeAll();
    }
}
