package io.delayrelay.app.metrics;

/**
 * One business's entries by state over its scanned shards, at Redis time {@code atMs}.
 *
 * @param due              due now, waiting in the shard zsets
 * @param scheduled        in the shard zsets, not yet due
 * @param inflight         popped, not yet confirmed
 * @param dead             in the dead sets
 * @param cold             live entries of the cold tier ({@code cold-after}: blocks not yet back in the shard zsets;
 *                         docs/cold-tier.md), due later than {@code scheduled}'s
 * @param oldestOverdueMs  how long the oldest due entry has waited (0 when nothing is due)
 * @param atMs             Redis time of the reading, epoch ms
 */
public record Backlog(long due, long scheduled, long inflight, long dead, long cold, long oldestOverdueMs, long atMs) {}
