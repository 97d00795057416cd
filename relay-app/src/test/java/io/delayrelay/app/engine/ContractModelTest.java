package io.delayrelay.app.engine;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import io.delayrelay.app.engine.ContractModel.Settings;
import io.delayrelay.app.engine.ContractWorld.Failure;
import io.delayrelay.app.support.PrivateRedis;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.Transformer;
import org.slf4j.LoggerFactory;

/**
 * A model-based test of the whole Redis contract (issue 22): random sequences of producer actions (schedule by id
 * and by message through the Java producer's scripts, a plain ZADD, re-schedule, cancel), relay actions (pops by
 * two instances with their lease tokens, acks, nacks, confirm timeouts, returns, unsent batches, lease expiry and
 * the reaper's take-back, reshards up and down, the topology keepers' retirement) and operator actions (dead-letter
 * replay, purge and trim, cancel and deliver-now, pause and resume, the listed and counted figures), with time
 * advancing, on the production classes and the real Lua scripts on a real Redis (a private redis-server). After
 * every step every key of the business is compared with {@link ContractModel}; a failure shrinks to a short
 * sequence and names the seed that replays it.
 *
 * <p>Time is pinned ({@link PinnedClockRedis}), so the model decides what is due. {@code -Dmodel.tries=N} runs N
 * sequences (1,000 by default), {@code -Dmodel.steps=N} allows up to N steps each (40), {@code -Dmodel.seed=S}
 * replays a seed, {@code -Dmodel.tolerate=1,2,3} relaxes the checks of known findings ({@link ContractModel.Finding}).
 * Without {@code -Dmodel.seed} a run draws the sequences of {@link #FIXED_SEED}, the same in every build, and checks
 * afterwards that they reached the rare situations of {@link #MUST_REACH}; {@code -Dmodel.seed=random} draws new ones
 * (an exploration: {@code -Dmodel.seed=random -Dmodel.tries=20000}).
 * docs/contributing/model-test.md tells what is modelled and how to read a failure. Stays long (~60 s): CI keeps its
 * 1,000 sequences, and every key is compared after every step.
 */
class ContractModelTest {

    private static final int DEFAULT_TRIES = 1000;
    /**
     * The seed of a run without {@code -Dmodel.seed}: every build tries the same 1,000 sequences, so a failure there
     * is the code's and replays as it is, and a path the sequences reach in one build they reach in all (review N24:
     * with a new seed per run some rare paths came up 0-2 times). Chosen among 7 drawn seeds for reaching the most
     * rare situations: every one of {@link #MUST_REACH}, 2-9 times each. None of the 7 reached a promotion of a block
     * already promoted, one reached a retirement with dead letters beyond the count in force (once).
     */
    static final String FIXED_SEED = "-3015109537733101792";
    /**
     * Rare situations the fixed seed's sequences must reach at least once (counted by {@link ContractWorld#COVERAGE}
     * and checked after the run): a change to the generators or the model that stops reaching one fails the run,
     * instead of silently testing less.
     */
    static final List<String> MUST_REACH = List.of(
            "cold blocks written from a stale listing (some entries stayed hot)",
            "cold listings left half demoted",
            "cold members demoted again (a raw ZADD's copy replaces the cold one)",
            "cold promotions skipping cancelled or replaced entries",
            "cold entries cancelled by the operator",
            "cold entries delivered now by the operator",
            "cold blocks not written (every listed entry changed)",
            "plain ZADDs of a cold member (a second live copy)",
            "size trims with an excess",
            "size trims whose cutoff is a tie",
            "dead letters replayed",
            "shard counts retired",
            "pops passing a due schedule held back by its member's delivery");

    private static volatile boolean fixedSeedRun;
    private static volatile boolean propertyPassed;
    private static final int DEFAULT_STEPS = 40;
    private static final long START_MS = 1_800_000_000_000L;

    private static PrivateRedis redis;
    private static ContractWorld.Shared shared;
    private static ContractWorld current;
    private static final AtomicLong worlds = new AtomicLong();
    private static final AtomicLong steps = new AtomicLong();
    private static long startedNanos;
    private static Settings nextSettings;
    private static int nextShards;
    private static Level logLevel;

    @BeforeContainer
    static void startRedis() {
        redis = PrivateRedis.start("");
        shared = ContractWorld.Shared.on(redis.factory());
        // reshards, retirements, trims and dead letters are logged: thousands of sequences would fill the test output
        // (the model checks every outcome the logs would tell)
        Logger relayLog = (Logger) LoggerFactory.getLogger("io.delayrelay");
        logLevel = relayLog.getLevel();
        relayLog.setLevel(Level.OFF);
        startedNanos = System.nanoTime();
    }

    @AfterContainer
    static void stopRedis() {
        finish();
        System.out.printf(
                "contract model: %d sequences, %d steps, %.1f s%n",
                worlds.get(), steps.get(), (System.nanoTime() - startedNanos) / 1e9);
        printCoverage();
        ((Logger) LoggerFactory.getLogger("io.delayrelay")).setLevel(logLevel);
        if (redis != null) {
            redis.close();
        }
        if (fixedSeedRun && propertyPassed) {
            for (String situation : MUST_REACH) {
                AtomicLong n = ContractWorld.COVERAGE.get(situation);
                if (n == null || n.get() == 0) {
                    throw new AssertionError("the fixed seed's " + DEFAULT_TRIES + " sequences no longer reach \""
                            + situation + "\" (ContractModelTest.MUST_REACH): a change to the generators or the model"
                            + " made the run test less; choose a seed that reaches it (-Dmodel.seed=random prints"
                            + " what a seed reaches) or say in MUST_REACH why the situation is gone");
                }
            }
        }
    }

    @Property(tries = DEFAULT_TRIES)
    @AddLifecycleHook(RunSettings.class)
    void theRedisContractHoldsAfterEveryStep(
            @ForAll("settings") Settings settings,
            @ForAll @IntRange(min = 1, max = ContractModel.MAX_SHARDS) int shards,
            @ForAll("sequences") ActionChain<ContractWorld> chain) {
        nextSettings = settings;
        nextShards = shards;
        chain.withInvariant("Redis holds what the model holds", ContractWorld::check)
                .run();
    }

    private static ContractWorld newWorld(Settings settings, int shards) {
        finish();
        if (worlds.get() > 0 && worlds.get() % 5000 == 0) {
            System.out.printf(
                    "contract model: %d sequences, %d steps, %.1f s so far%n",
                    worlds.get(), steps.get(), (System.nanoTime() - startedNanos) / 1e9);
            printCoverage();
        }
        current = new ContractWorld(
                shared,
                "model-" + ProcessHandle.current().pid() + "-" + worlds.incrementAndGet(),
                settings,
                START_MS,
                shards);
        return current;
    }

    private static void printCoverage() {
        ContractWorld.COVERAGE.forEach((situation, n) -> System.out.printf("  %,10d %s%n", n.get(), situation));
    }

    /** Counts the steps of the world that ran last and deletes its keys. */
    private static void finish() {
        if (current != null) {
            steps.addAndGet(current.steps);
            current.delete();
            current = null;
        }
    }

    @Provide
    Arbitrary<Settings> settings() {
        // max-lateness: none, or shorter / longer than a lease and the retry back-off, so that first deliveries and
        // retries both meet it (-1: none)
        return Combinators.combine(
                        Arbitraries.of(1, 2, 3),
                        Arbitraries.of(1L << 20, 12L, 30L),
                        Arbitraries.of(2, 3),
                        Arbitraries.of(-1L, -1L, 500L, 2500L),
                        Arbitraries.of(false, true))
                .as((batch, bytes, attempts, lateness, drop) ->
                        new Settings(batch, bytes, 1000, 300, 1200, attempts, lateness, drop));
    }

    /**
     * The business's settings and first shard count are parameters of their own (set before the chain runs), not
     * a flat map over the chain: jqwik then shrinks the sequence and the settings each on its own.
     */
    @Provide
    Arbitrary<ActionChain<ContractWorld>> sequences() {
        int maxSteps = Integer.getInteger("model.steps", DEFAULT_STEPS);
        return ActionChain.<ContractWorld>startWith(() -> newWorld(nextSettings, nextShards))
                .withAction(4, scheduleById())
                .withAction(2, scheduleMessage())
                .withAction(2, plainZadd())
                .withAction(2, reschedule())
                .withAction(1, scheduleAgainWhileInFlight())
                .withAction(1, cancel())
                .withAction(8, pop())
                .withAction(4, popMany())
                .withAction(4, popCarrying())
                .withAction(3, ack())
                .withAction(2, ackMany())
                .withAction(4, fail())
                .withAction(2, reap())
                .withAction(10, advance())
                .withAction(2, reshard())
                .withAction(2, retire())
                .withAction(2, trim())
                .withAction(1, replay())
                .withAction(1, purge())
                .withAction(1, opsEntries())
                .withAction(1, pause())
                .withAction(1, look())
                .withAction(4, coldPick())
                .withAction(4, coldDemote())
                .withAction(2, coldListDue())
                .withAction(2, coldPromote())
                .withAction(2, coldPass())
                .withMaxTransformations(maxSteps);
    }

    // ---- actions ----

    private static Arbitrary<Long> delays() {
        // 2.5 to 9 s: beyond the cold tier's cold-after (2 s, ColdMovers.TIMING), so entries go cold and come back
        return Arbitraries.of(-1500L, -1L, 0L, 1L, 200L, 1000L, 2500L, 3000L, 6000L, 9000L);
    }

    private static Arbitrary<String> members() {
        return Combinators.combine(
                        Arbitraries.of(ContractWorld.ID_PREFIX, ContractWorld.MESSAGE_PREFIX),
                        Arbitraries.integers().between(0, ContractWorld.MEMBERS - 1))
                .as((prefix, i) -> prefix + i);
    }

    private static Arbitrary<Integer> memberIndexes() {
        return Arbitraries.integers().between(0, ContractWorld.MEMBERS - 1);
    }

    private static Action.Independent<ContractWorld> action(Arbitrary<Transformer<ContractWorld>> transformers) {
        return () -> transformers;
    }

    private static Action<ContractWorld> scheduleById() {
        return action(Combinators.combine(memberIndexes(), delays(), Arbitraries.of(false, true))
                .as((i, delay, after) -> Transformer.mutate(
                        "scheduleById id" + i + (after ? " after " + Math.max(0, delay) : " at now" + signed(delay)),
                        w -> w.scheduleById(i, after ? Math.max(0, delay) : delay, after))));
    }

    private static Action<ContractWorld> scheduleMessage() {
        return action(Combinators.combine(memberIndexes(), delays())
                .as((i, delay) -> Transformer.mutate(
                        "schedule m" + i + " at now" + signed(delay), w -> w.scheduleMessage(i, delay))));
    }

    private static Action<ContractWorld> scheduleAgainWhileInFlight() {
        return action(delays().map(delay -> Transformer.mutate(
                "schedule every member in flight again at now" + signed(delay),
                w -> w.scheduleAgainWhileInFlight(delay))));
    }

    private static Action<ContractWorld> plainZadd() {
        return action(Combinators.combine(memberIndexes(), delays())
                .as((i, delay) ->
                        Transformer.mutate("ZADD m" + i + " at now" + signed(delay), w -> w.plainZadd(i, delay))));
    }

    private static Action<ContractWorld> reschedule() {
        return action(Combinators.combine(members(), delays())
                .as((m, delay) -> Transformer.mutate(
                        "reschedule " + m + " to now" + signed(delay), w -> w.reschedule(m, delay))));
    }

    private static Action<ContractWorld> cancel() {
        return action(members().map(m -> Transformer.mutate("cancel " + m, w -> w.cancel(m))));
    }

    private static Action<ContractWorld> pop() {
        return action(Combinators.combine(
                        Arbitraries.integers().between(0, 1),
                        Arbitraries.integers().between(0, ContractModel.MAX_SHARDS - 1),
                        Arbitraries.of(false, true),
                        leads())
                .as((instance, pick, known, lead) -> Transformer.mutate(
                        "pop shard #" + pick + " by instance " + instance + (known ? " (known due)" : "")
                                + (lead > 0 ? ", lead " + lead + " ms" : ""),
                        w -> w.pop(instance, pick, known, lead))));
    }

    /** pop.lua's lead (pop-ahead): mostly none, as a relay at the default; else a short and a long one. */
    private static Arbitrary<Long> leads() {
        return Arbitraries.frequencyOf(
                Tuple.of(2, Arbitraries.just(0L)),
                Tuple.of(1, Arbitraries.just(20L)),
                Tuple.of(1, Arbitraries.just(300L)));
    }

    /** A pop of several shards in one call, as a worker pops the shards due within its linger. */
    private static Action<ContractWorld> popMany() {
        return action(Combinators.combine(
                        Arbitraries.integers().between(0, 1),
                        Arbitraries.integers()
                                .between(0, ContractModel.MAX_SHARDS - 1)
                                .list()
                                .ofMinSize(2)
                                .ofMaxSize(ContractModel.MAX_SHARDS)
                                .uniqueElements(),
                        Arbitraries.of(false, true).list().ofMinSize(1).ofMaxSize(ContractModel.MAX_SHARDS))
                .as((instance, picks, known) -> Transformer.mutate(
                        "pop shards #" + picks + " by instance " + instance + " in one call, known due " + known,
                        w -> w.popMany(instance, picks, known))));
    }

    /** A pop of 1-4 shards carrying the acks of 1-3 leases, as a worker's pop carries the acks of earlier rounds. */
    private static Action<ContractWorld> popCarrying() {
        return action(Combinators.combine(
                        Arbitraries.integers().between(0, 1),
                        Arbitraries.integers()
                                .between(0, ContractModel.MAX_SHARDS - 1)
                                .list()
                                .ofMinSize(1)
                                .ofMaxSize(ContractModel.MAX_SHARDS)
                                .uniqueElements(),
                        Arbitraries.of(false, true).list().ofMinSize(1).ofMaxSize(ContractModel.MAX_SHARDS),
                        Arbitraries.integers().between(0, 7).list().ofMinSize(1).ofMaxSize(3),
                        Arbitraries.integers().between(0, 7),
                        leads())
                .as((instance, picks, known, ackPicks, mask, lead) -> Transformer.mutate(
                        "pop shards #" + picks + " by instance " + instance + ", known due " + known
                                + ", carrying acks of leases #" + ackPicks + " mask " + mask
                                + (lead > 0 ? ", lead " + lead + " ms" : ""),
                        w -> w.popCarrying(instance, picks, known, ackPicks, mask, lead))));
    }

    /** Acks of several leases in one call, as the settler acks a pop of several shards. */
    private static Action<ContractWorld> ackMany() {
        return action(Combinators.combine(
                        Arbitraries.integers().between(0, 7).list().ofMinSize(2).ofMaxSize(3),
                        Arbitraries.integers().between(0, 7))
                .as((picks, mask) -> Transformer.mutate(
                        "ack leases #" + picks + " mask " + mask + " in one call", w -> w.ackMany(picks, mask))));
    }

    private static Action<ContractWorld> ack() {
        return action(Combinators.combine(
                        Arbitraries.integers().between(0, 7),
                        Arbitraries.integers().between(0, 7))
                .as((pick, mask) ->
                        Transformer.mutate("ack lease #" + pick + " mask " + mask, w -> w.ack(pick, mask))));
    }

    private static Action<ContractWorld> fail() {
        return action(Combinators.combine(
                        Arbitraries.integers().between(0, 7),
                        Arbitraries.integers().between(0, 7),
                        Arbitraries.of(Failure.class))
                .as((pick, mask, failure) -> Transformer.mutate(
                        failure + " lease #" + pick + " mask " + mask, w -> w.fail(pick, mask, failure))));
    }

    private static Action<ContractWorld> reap() {
        return action(Combinators.combine(
                        Arbitraries.integers().between(0, 1),
                        Arbitraries.integers().between(0, ContractModel.MAX_SHARDS - 1))
                .as((instance, pick) -> Transformer.mutate(
                        "reap shard #" + pick + " by instance " + instance,
                        w -> w.reap(instance, pick % w.scanWidth(instance)))));
    }

    private static Action<ContractWorld> advance() {
        return action(Arbitraries.of(1L, 49L, 50L, 300L, 1000L, 1200L, 5000L)
                .map(ms -> Transformer.mutate("time +" + ms + " ms", w -> w.advance(ms))));
    }

    private static Action<ContractWorld> reshard() {
        return action(Arbitraries.integers()
                .between(1, ContractModel.MAX_SHARDS)
                .map(n -> Transformer.mutate("reshard to " + n, w -> w.reshard(n))));
    }

    private static Action<ContractWorld> retire() {
        return Action.just(Transformer.mutate("topology keepers retire drained counts", ContractWorld::retire));
    }

    private static Action<ContractWorld> trim() {
        return action(Combinators.combine(Arbitraries.of(1, 2, 3), Arbitraries.of(3000L, 600_000L))
                .as((size, age) -> Transformer.mutate(
                        "trim dead sets to " + size + ", max age " + age + " ms", w -> w.trim(size, age))));
    }

    private static Action<ContractWorld> replay() {
        return action(Combinators.combine(Arbitraries.integers().between(0, 2), members(), Arbitraries.of(1, 2, 3))
                .as((kind, m, limit) ->
                        Transformer.mutate("replay " + target(kind, m, limit), w -> w.replay(kind, m, limit))));
    }

    private static Action<ContractWorld> purge() {
        return action(Combinators.combine(Arbitraries.integers().between(0, 2), members(), Arbitraries.of(1, 2, 3))
                .as((kind, m, limit) ->
                        Transformer.mutate("purge " + target(kind, m, limit), w -> w.purge(kind, m, limit))));
    }

    private static String target(int kind, String member, int limit) {
        return switch (kind) {
            case 0 -> "dead letter " + member;
            case 1 -> "every dead letter";
            default -> "the oldest " + limit + " dead letter(s)";
        };
    }

    private static Action<ContractWorld> opsEntries() {
        return action(Combinators.combine(Arbitraries.of(true, false), members())
                .as((cancel, m) -> Transformer.mutate(
                        (cancel ? "ops cancel " : "ops deliver now ") + m, w -> w.opsEntries(cancel, m))));
    }

    private static Action<ContractWorld> pause() {
        return action(Arbitraries.of(true, false)
                .map(pause -> Transformer.mutate(pause ? "operator pause" : "operator resume", w -> w.pause(pause))));
    }

    private static Action<ContractWorld> look() {
        return Action.just(
                Transformer.mutate("list dead letters, read the backlog and the count", ContractWorld::look));
    }

    // ---- the cold tier's two movers (ColdMovers) ----

    private static Arbitrary<Integer> movers() {
        return Arbitraries.integers().between(0, ColdMovers.MOVERS - 1);
    }

    private static Arbitrary<Integer> shardPicks() {
        return Arbitraries.integers().between(0, ContractModel.MAX_SHARDS - 1);
    }

    private static Action<ContractWorld> coldPick() {
        return action(Combinators.combine(movers(), shardPicks())
                .as((mover, pick) -> Transformer.mutate(
                        "mover " + mover + " lists shard #" + pick + " to demote (cold-pick)",
                        w -> w.movers.pick(mover, pick))));
    }

    private static Action<ContractWorld> coldDemote() {
        return action(Combinators.combine(movers(), Arbitraries.of(false, true))
                .as((mover, all) -> Transformer.mutate(
                        "mover " + mover + " demotes " + (all ? "its listing" : "the first block of its listing")
                                + " (cold-demote)",
                        w -> w.movers.demote(mover, all))));
    }

    private static Action<ContractWorld> coldListDue() {
        return action(Combinators.combine(movers(), shardPicks())
                .as((mover, pick) -> Transformer.mutate(
                        "mover " + mover + " lists the due blocks of shard #" + pick + " (cold-due)",
                        w -> w.movers.listDue(mover, pick))));
    }

    private static Action<ContractWorld> coldPromote() {
        return action(Combinators.combine(movers(), Arbitraries.integers().between(0, 1))
                .as((mover, which) -> Transformer.mutate(
                        "mover " + mover + " promotes its listed block #" + which + " (cold-promote)",
                        w -> w.movers.promote(mover, which))));
    }

    private static Action<ContractWorld> coldPass() {
        return action(movers().map(mover -> Transformer.mutate(
                "mover " + mover + " runs a whole pass over its shards (promote what is due, demote)",
                w -> w.movers.pass(mover))));
    }

    private static String signed(long delay) {
        return delay < 0 ? Long.toString(delay) : "+" + delay;
    }

    /**
     * {@code -Dmodel.tries} and {@code -Dmodel.seed} override the property's tries and seed (without a seed: {@link
     * #FIXED_SEED}; {@code random}: a new one); a failure names the seed that replays it.
     */
    public static final class RunSettings implements AroundPropertyHook {

        public RunSettings() {}

        @Override
        public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
            String tries = System.getProperty("model.tries");
            if (tries != null && !tries.isBlank()) {
                context.attributes().setTries(Integer.parseInt(tries.trim()));
            }
            String seed = System.getProperty("model.seed", "").trim();
            if (seed.isEmpty()) {
                context.attributes().setSeed(FIXED_SEED);
                fixedSeedRun = tries == null || tries.isBlank() || Integer.parseInt(tries.trim()) >= DEFAULT_TRIES;
            } else if (!seed.equals("random")) {
                context.attributes().setSeed(seed);
            }
            PropertyExecutionResult result = property.execute();
            propertyPassed = result.status() == PropertyExecutionResult.Status.SUCCESSFUL;
            System.out.println("contract model seed: " + result.seed().orElse("?")
                    + (seed.equals("random") ? " (drawn)" : seed.isEmpty() ? " (FIXED_SEED)" : ""));
            if (result.status() == PropertyExecutionResult.Status.FAILED) {
                String replay = "replay: -Dmodel.seed=" + result.seed().orElse("?") + " -Dmodel.tries="
                        + result.countTries() + " (the failing sequence is that seed's last; the next run also tries"
                        + " the shrunk one first, from target/jqwik-database)";
                System.out.println("contract model failed; " + replay);
                return result.mapToFailed(new AssertionError(
                        replay + ": "
                                + result.throwable().map(Throwable::getMessage).orElse(""),
                        result.throwable().orElse(null)));
            }
            return result;
        }
    }
}
