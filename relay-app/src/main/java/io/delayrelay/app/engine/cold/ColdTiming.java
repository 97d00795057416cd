package io.delayrelay.app.engine.cold;

import java.time.Duration;

/**
 * How the cold tier of a business with {@code cold-after} A moves its entries (docs/cold-tier.md): an entry due after
 * now + A is demoted; blocks hold entries of one bucket of due times, A/4 wide (1 s to 6 h); a block comes back to
 * the hot shard once its earliest entry is due within the lead A/2, checked every period (A/20, 250 ms to 1 s).
 * Lead + bucket = 3/4 A stays below A, so a promoted entry is never demoted again, and the lead is at least 10 ×
 * the period, so promotion runs many times before anything of a block is due.
 */
public record ColdTiming(long coldAfterMs, long bucketMs, long leadMs, long periodMs) {

    static final long MAX_BUCKET_MS = Duration.ofHours(6).toMillis();

    public static ColdTiming of(Duration coldAfter) {
        long a = coldAfter.toMillis();
        return new ColdTiming(a, clamp(a / 4, 1_000, MAX_BUCKET_MS), a / 2, clamp(a / 20, 250, 1_000));
    }

    /**
     * How long a bucket of fewer entries than a block waits for more before it is demoted: one bucket's width, at most
     * a minute (a steady trickle then makes one block per bucket, not one per period).
     */
    public long fillWaitMs() {
        return Math.min(bucketMs, ColdMover.FILL_WAIT_MAX_MS);
    }

    /** The bucket of a due time. */
    long bucketOf(long dueMs) {
        return Math.floorDiv(dueMs, bucketMs);
    }

    private static long clamp(long v, long min, long max) {
        return Math.max(min, Math.min(max, v));
    }
}
