package io.delayrelay.app.engine;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * A business's fleet-wide rate cap ({@code max-rate}) as this instance's workers see it. The cap is a token bucket in
 * Redis ({@code K:rate}, charged by rate.lua on Redis time), shared by every instance: before a pop a worker takes an
 * allowance, and gives back what the pop did not use. A business without a cap never calls Redis here.
 */
class RateGovernor {

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> RATE = LuaScripts.load("io/delayrelay/app/lua/rate.lua", List.class);

    /** Longest single sleep of a worker at a closed gate: a stop or a reload is noticed within it. */
    static final long MAX_SLEEP_MS = 50;

    private final RedisTemplate<byte[], byte[]> redis;
    private final EventReporter events;
    private final LongSupplier nanoTime;
    /** Monotonic time until which the bucket has no chunk for this instance, and the rate that said so. */
    private volatile long closedUntilNanos;

    private volatile int closedForRate;

    RateGovernor(RedisTemplate<byte[], byte[]> redis, EventReporter events) {
        this(redis, events, System::nanoTime);
    }

    RateGovernor(RedisTemplate<byte[], byte[]> redis, EventReporter events, LongSupplier nanoTime) {
        this.redis = redis;
        this.events = events;
        this.nanoTime = nanoTime;
    }

    /** Tokens refilled per fiftieth of a second, at least 1, at most a batch: the least a worker takes. */
    static long chunk(BusinessSpec spec) {
        return Math.max(1, Math.min(spec.batch().size(), ceilDiv(spec.maxRate(), 50)));
    }

    /** Most tokens the bucket holds: a tenth of a second's worth, at least a chunk. */
    static long burst(BusinessSpec spec) {
        return Math.max(chunk(spec), ceilDiv(spec.maxRate(), 10));
    }

    /** How long this instance's workers should still wait before asking the bucket (0: ask now, or no cap). */
    long closedForMs(BusinessSpec spec) {
        if (!spec.rateCapped() || closedForRate != spec.maxRate()) {
            return 0;
        }
        long left = closedUntilNanos - nanoTime.getAsLong();
        return left <= 0 ? 0 : TimeUnit.NANOSECONDS.toMillis(left) + 1;
    }

    /** Sleeps at most {@code ms} (and at most {@link #MAX_SLEEP_MS}) at a closed gate. */
    static void sleep(long ms) throws InterruptedException {
        Thread.sleep(Math.max(1, Math.min(ms, MAX_SLEEP_MS)));
    }

    /**
     * The most entries the next pop may take: {@code want} without a cap; else what the bucket grants, at most a
     * chunk (0: nothing now, the gate is closed until a chunk is there).
     * <p>
     * The bucket refills at max-rate per second and holds a tenth of a second's worth ({@link #burst}). A worker
     * takes a chunk, a fiftieth of a second's worth ({@link #chunk}), and nothing while less is there: capped pops are
     * batches of a useful size. While the bucket has no chunk the workers wait on a local gate ({@link #closedForMs}),
     * without asking Redis. The cap is read from the spec at every call: a reloaded max-rate applies to the next pop.
     */
    int take(BusinessSpec spec, int want) {
        if (!spec.rateCapped()) {
            return want;
        }
        // a chunk per pop: the shards of a backlog drain at the same pace, so that the earliest due across them go
        // first (a pop takes the earliest of one shard; a whole burst from one shard would run ahead of the others)
        int ask = (int) Math.min(want, chunk(spec));
        RateCharge charge = charge(spec.keys(), spec.maxRate(), burst(spec), ask, chunk(spec), 0);
        after(spec, charge);
        return charge.granted();
    }

    /** Gives back what a pop did not use of its allowance (its shard had fewer due). */
    void giveBack(BusinessSpec spec, int unused) {
        if (!spec.rateCapped() || unused <= 0) {
            return;
        }
        RateCharge charge = charge(spec.keys(), spec.maxRate(), burst(spec), 0, chunk(spec), unused);
        after(spec, charge);
    }

    /** What {@link #charge} got: tokens granted, ms until a chunk is there again, whole tokens left. */
    record RateCharge(int granted, long waitMs, long left) {}

    /**
     * Charges the business's fleet-wide bucket ({@code K:rate}, rate.lua): gives back {@code giveBack} unused tokens,
     * then takes up to {@code want} if at least {@code min(want, chunk)} are there.
     */
    RateCharge charge(DelayQueueKeys keys, int rate, long burst, int want, long chunk, long giveBack) {
        List<?> reply = redis.execute(
                RATE, List.of(bytes(keys.rate())), num(rate), num(burst), num(want), num(chunk), num(giveBack));
        return new RateCharge(
                ((Number) reply.get(0)).intValue(),
                ((Number) reply.get(1)).longValue(),
                ((Number) reply.get(2)).longValue());
    }

    private void after(BusinessSpec spec, RateCharge charge) {
        if (charge.waitMs() > 0) {
            closedUntilNanos = nanoTime.getAsLong() + TimeUnit.MILLISECONDS.toNanos(charge.waitMs());
            closedForRate = spec.maxRate();
        } else {
            closedUntilNanos = nanoTime.getAsLong();
        }
        events.emit(spec, -1, e -> e.rateCharged(spec, charge.granted(), charge.left()));
    }

    private static byte[] num(long value) {
        return bytes(Long.toString(value));
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
