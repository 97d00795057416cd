package io.delayrelay.api.internal;

import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.stream.IntStream;

import io.delayrelay.api.ShardSelector;

/**
 * The shard counts of a business as published in {@code K:meta}: the current one producers hash into, earlier
 * ones whose extra shards the relay still drains, and earlier ones an entry may still be found under. The relay
 * and the producers read it alike, so the scan-width rule ({@link #scanWidth(int)}) is written here once.
 *
 * @param shards   current shard count M
 * @param draining earlier shard counts still drained, may be empty
 * @param history  earlier shard counts, most recent first, may be empty
 * @param applied  false when a relay's write of its own count lost to a configuration with a higher topology
 *                 version; true for every read
 */
public record ShardTopology(int shards, int[] draining, int[] history, boolean applied) {

    public ShardTopology {
        if (shards < 1) {
            throw new IllegalArgumentException("shards must be >= 1, was " + shards);
        }
        draining = draining == null ? new int[0] : draining.clone();
        history = history == null ? new int[0] : history.clone();
    }

    /** The topology as read from {@code K:meta}. */
    public ShardTopology(int shards, int[] draining, int[] history) {
        this(shards, draining, history, true);
    }

    public static ShardTopology of(int shards) {
        return new ShardTopology(shards, new int[0], new int[0]);
    }

    /** Parses a list field: comma-separated positive numbers; blanks and junk are ignored. */
    public static int[] parseList(String text) {
        if (text == null || text.isBlank()) {
            return new int[0];
        }
        return Arrays.stream(text.split(","))
                .map(String::trim)
                .filter(s -> s.matches("[1-9][0-9]{0,5}"))
                .mapToInt(Integer::parseInt)
                .toArray();
    }

    /** The shard a key hashes to now, then under each earlier shard count; no repeats. */
    public Set<Integer> candidateShards(byte[] shardingKey) {
        Set<Integer> result = new LinkedHashSet<>();
        result.add(ShardSelector.shardOf(shardingKey, shards));
        for (int m : draining) {
            result.add(ShardSelector.shardOf(shardingKey, m));
        }
        for (int m : history) {
            result.add(ShardSelector.shardOf(shardingKey, m));
        }
        return result;
    }

    /** The shard counts recorded: the one in force, then those still draining. */
    public int[] recorded() {
        return IntStream.concat(IntStream.of(shards), Arrays.stream(draining)).toArray();
    }

    /** Every shard index that may hold entries: 0 .. max(shards, draining...) - 1. */
    public int scanWidth() {
        return scanWidth(shards);
    }

    /**
     * The one scan-width rule: shards looked at by whoever hashes into {@code ownShards}. That is the largest of
     * {@code ownShards}, the count in force and every count still draining.
     */
    public int scanWidth(int ownShards) {
        int width = Math.max(ownShards, shards);
        for (int m : draining) {
            width = Math.max(width, m);
        }
        return width;
    }
}
