package io.delayrelay.api.internal;

import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;

import io.delayrelay.api.ShardSelector;

/**
 * The shard counts of a business as published in {@code K:meta}: the current one producers hash into, earlier
 * ones whose extra shards the relay still drains, and earlier ones an entry may still be found under.
 *
 * @param shards   current shard count M
 * @param draining earlier shard counts still drained, may be empty
 * @param history  earlier shard counts, most recent first, may be empty
 */
public record ShardTopology(int shards, int[] draining, int[] history) {

    public ShardTopology {
        if (shards < 1) {
            throw new IllegalArgumentException("shards must be >= 1, was " + shards);
        }
        draining = draining == null ? new int[0] : draining.clone();
        history = history == null ? new int[0] : history.clone();
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

    /** Every shard index that may hold entries: 0 .. max(shards, draining...) - 1. */
    public int scanWidth() {
        int width = shards;
        for (int m : draining) {
            width = Math.max(width, m);
        }
        return width;
    }
}
