package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.BusinessSpecBuilder;
import io.delayrelay.app.trigger.DueMessage;
import org.springframework.data.redis.connection.RedisConnection;

/**
 * Drives engine pieces directly against the real Redis: a business's relay built by hand with a publisher the
 * test controls, a store that counts its pops, raw entries written into shards, and cleanup of all of it.
 */
final class EngineFixture implements AutoCloseable {

    final RelayTestKit kit = new RelayTestKit();
    final CountingStore store = new CountingStore(kit);
    final RedisClock clock = new RedisClock();
    private final List<BusinessRelay> started = new ArrayList<>();

    /**
     * A builder of a test business with fast defaults: one shard, one thread, batches of 10, five attempts, a retry
     * after a second, a 5 s publish timeout.
     */
    BusinessSpecBuilder spec(String prefix) {
        String name = kit.business(prefix);
        return BusinessSpec.builder(name, DelayQueueKeys.forBusiness(name))
                .shards(1)
                .threads(1)
                .exchange("unused-exchange", "direct", false)
                .routingKey("rk")
                .batchSize(10)
                .maxAttempts(5)
                .retryDelay(Duration.ofSeconds(1), Duration.ofMinutes(1))
                .publishTimeout(Duration.ofSeconds(5))
                .deadBounds(10_000, Duration.ofDays(7));
    }

    BusinessRelay start(BusinessSpec spec, BatchPublisher publisher, RelayEvents events) {
        EventReporter reporter = new EventReporter(events);
        BusinessRelay relay = new BusinessRelay(
                spec, store, publisher, reporter, clock, ShardDivision.none(), new CountingGovernor(reporter));
        relay.adoptTopology(0);
        relay.start();
        started.add(relay);
        return relay;
    }

    /** Writes a raw entry into a shard, due at {@code dueMs} (Redis time). */
    void zadd(BusinessSpec spec, int shard, String member, long dueMs) {
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(spec.keys().shard(shard)), dueMs, bytes(member));
        }
    }

    /** Writes a string where a shard's zset belongs (another program's mistake). */
    void breakShard(BusinessSpec spec, int shard) {
        try (RedisConnection c = kit.redis()) {
            c.stringCommands().set(bytes(spec.keys().shard(shard)), bytes("not a zset"));
        }
    }

    long inflight(BusinessSpec spec) {
        return kit.countAll(spec.name(), "inflight");
    }

    /** The live thread of worker {@code index}. */
    static Thread worker(BusinessSpec spec, int index) {
        String name = spec.threadNamePrefix() + index;
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(name) && t.isAlive())
                .findFirst()
                .orElseThrow(() -> new AssertionError("no live worker thread " + name));
    }

    /** Whether the thread is parked in a method of {@code type}. */
    static boolean parkedIn(Thread thread, Class<?> type) {
        if (thread.getState() != Thread.State.WAITING && thread.getState() != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals(type.getName())) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() {
        started.forEach(r -> r.stop(Duration.ofMillis(200)));
        kit.close();
    }

    /** The members a pop handed out, as text, in order. */
    static List<String> members(PopResult result) {
        return result.entries().stream()
                .map(e -> new String(e.member(), StandardCharsets.UTF_8))
                .toList();
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The real store, counting pops; the next pop can be made to throw. */
    static final class CountingStore extends ShardStore {
        final AtomicInteger pops = new AtomicInteger();
        final AtomicReference<Throwable> failNextPop = new AtomicReference<>();

        CountingStore(RelayTestKit kit) {
            super(kit.redisFactory());
        }

        /** Pops of several shards in one call: the shards of each, in call order. */
        final List<int[]> multiPops = new CopyOnWriteArrayList<>();

        /** Pops that carried acks (pop.lua with ack sections). */
        final AtomicInteger carryingPops = new AtomicInteger();

        @Override
        public Popped pop(BusinessSpec spec, Round round, List<Ack> carried) {
            pops.incrementAndGet();
            if (round.size() > 1) {
                multiPops.add(round.shards().clone());
            }
            if (!carried.isEmpty()) {
                carryingPops.incrementAndGet();
            }
            throwInjectedFailure();
            return super.pop(spec, round, carried);
        }

        /** Throws the failure a test set for the next pop, if any. */
        private void throwInjectedFailure() {
            Throwable failure = failNextPop.getAndSet(null);
            if (failure instanceof RuntimeException e) {
                throw e;
            }
            if (failure instanceof Error e) {
                throw e;
            }
        }
    }

    /** Calls of the rate bucket by the relays started here, tokens granted, calls that gave tokens back and how many. */
    final AtomicInteger rateCharges = new AtomicInteger();

    final AtomicLong granted = new AtomicLong();
    final AtomicInteger giveBacks = new AtomicInteger();
    final AtomicLong givenBack = new AtomicLong();

    /** The real rate governor, counting its charges of the bucket into this fixture. */
    private final class CountingGovernor extends RateGovernor {

        CountingGovernor(EventReporter events) {
            super(store.redis(), events);
        }

        @Override
        RateCharge charge(DelayQueueKeys keys, int rate, long burst, int want, long chunk, long giveBack) {
            rateCharges.incrementAndGet();
            if (giveBack > 0) {
                givenBack.addAndGet(giveBack);
                giveBacks.incrementAndGet();
            }
            RateCharge charge = super.charge(keys, rate, burst, want, chunk, giveBack);
            granted.addAndGet(charge.granted());
            return charge;
        }
    }

    /** Publishes nothing; every batch awaits confirms until the test releases them. */
    static final class HoldingPublisher implements BatchPublisher {
        final List<CompletableFuture<List<PublishOutcome>>> pending = new CopyOnWriteArrayList<>();
        final List<DueMessage> published = new CopyOnWriteArrayList<>();

        @Override
        public CompletableFuture<List<PublishOutcome>> publish(BusinessSpec spec, List<DueMessage> batch) {
            published.addAll(batch);
            CompletableFuture<List<PublishOutcome>> confirms = new CompletableFuture<>();
            pending.add(confirms);
            return confirms;
        }

        @Override
        public void prepareExchange(BusinessSpec spec) {}
    }

    /** Confirms every message at once. */
    static final class ConfirmingPublisher implements BatchPublisher {
        final List<DueMessage> published = new CopyOnWriteArrayList<>();

        @Override
        public CompletableFuture<List<PublishOutcome>> publish(BusinessSpec spec, List<DueMessage> batch) {
            published.addAll(batch);
            return CompletableFuture.completedFuture(
                    batch.stream().map(m -> PublishOutcome.CONFIRMED).toList());
        }

        @Override
        public void prepareExchange(BusinessSpec spec) {}

        List<String> bodies() {
            return published.stream().map(DueMessage::bodyAsString).toList();
        }
    }

    /** Counts reported errors. */
    static class CountingEvents implements RelayEvents {
        final AtomicInteger errors = new AtomicInteger();
        final AtomicInteger workerRestarts = new AtomicInteger();

        @Override
        public void error(BusinessSpec spec, int shard, Throwable error) {
            errors.incrementAndGet();
        }

        @Override
        public void workerRestarted(BusinessSpec spec, String worker) {
            workerRestarts.incrementAndGet();
        }
    }
}
