package io.delayrelay.app.engine;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import io.delayrelay.app.trigger.BusinessSpec;

/**
 * A business's fleet-wide rate cap ({@code max-rate}) as this instance's workers see it. Before a pop a worker takes
 * an allowance from the business's token bucket in Redis ({@code K:rate}, charged by rate.lua on Redis time, shared
 * by every instance) and pops at most that many entries; what the pop did not use goes back into the bucket. The
 * bucket refills at max-rate per second and holds at most a tenth of a second's worth (the burst). A worker takes a
 * chunk, a fiftieth of a second's worth (at most a batch), and nothing while less than that is there: a capped
 * business pops batches of a useful size, not one entry per token, and no bigger, so that its shards drain at the
 * same pace and the earliest due across them go first.
 * <p>
 * When the bucket has no chunk left the workers of this instance wait, without asking Redis, until the bucket says
 * one will be there (a local gate on the monotonic clock): capped workers sleep, they do not spin. A business without
 * a cap never calls Redis here. The cap is read from the spec at every call, so a reloaded max-rate applies to the
 * next pop; the gate of an earlier rate is ignored.
 */
final class RateGovernor {

    /** Longest single sleep of a worker at a closed gate: a stop or a reload is noticed within it. */
    static final long MAX_SLEEP_MS = 50;

    private final ShardStore store;
    private final EventReporter events;
    private final LongSupplier nanoTime;
    /** Monotonic time until which the bucket has no chunk for this instance, and the rate that said so. */
    private volatile long closedUntilNanos;

    private volatile int closedForRate;

    RateGovernor(ShardStore store, EventReporter events) {
        this(store, events, System::nanoTime);
    }

    RateGovernor(ShardStore store, EventReporter events, LongSupplier nanoTime) {
        this.store = store;
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
     */
    int take(BusinessSpec spec, int want) {
        if (!spec.rateCapped()) {
            return want;
        }
        // a chunk per pop: the shards of a backlog drain at the same pace, so that the earliest due across them go
        // first (a pop takes the earliest of one shard; a whole burst from one shard would run ahead of the others)
        int ask = (int) Math.min(want, chunk(spec));
        ShardStore.RateCharge charge = store.chargeRate(spec.keys(), spec.maxRate(), burst(spec), ask, chunk(spec), 0);
        after(spec, charge);
        return charge.granted();
    }

    /** Gives back what a pop did not use of its allowance (its shard had fewer due). */
    void giveBack(BusinessSpec spec, int unused) {
        if (!spec.rateCapped() || unused <= 0) {
            return;
        }
        ShardStore.RateCharge charge =
                store.chargeRate(spec.keys(), spec.maxRate(), burst(spec), 0, chunk(spec), unused);
        after(spec, charge);
    }

    private void after(BusinessSpec spec, ShardStore.RateCharge charge) {
        if (charge.waitMs() > 0) {
            closedUntilNanos = nanoTime.getAsLong() + TimeUnit.MILLISECONDS.toNanos(charge.waitMs());
            closedForRate = spec.maxRate();
        } else {
            closedUntilNanos = nanoTime.getAsLong();
        }
        events.emit(spec, -1, e -> e.rateCharged(spec, charge.granted(), charge.left()));
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
