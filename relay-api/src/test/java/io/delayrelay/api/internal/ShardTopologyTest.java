package io.delayrelay.api.internal;

import java.nio.charset.StandardCharsets;

import io.delayrelay.api.ShardSelector;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The shard counts of {@code K:meta} as the relay and the id-based cancel read them, without Redis: which shards may
 * hold an entry (current count first, no repeats), how wide the relay scans, and what a hand-edited list field yields.
 */
class ShardTopologyTest {

    /** "hello" has CRC32 907060870: shard 6 of 16, 2 of 7, 0 of 5, 6 of 8 (docs/redis-contract.md). */
    private static final byte[] HELLO = "hello".getBytes(StandardCharsets.UTF_8);

    @Test
    void anEntryIsLookedForUnderTheCurrentCountFirstThenDrainingThenHistoryWithoutRepeats() {
        ShardTopology topology = new ShardTopology(16, new int[] {7}, new int[] {5, 8, 7});

        assertThat(topology.candidateShards(HELLO)).containsExactly(6, 2, 0);
        assertThat(ShardTopology.of(16).candidateShards(HELLO)).containsExactly(6);
        assertThat(new ShardTopology(7, new int[0], new int[] {16}).candidateShards(HELLO))
                .containsExactly(2, 6);
        assertThat(new ShardTopology(7, new int[] {16}, new int[0]).candidateShards(HELLO))
                .containsExactly(2, 6);
        assertThat(ShardSelector.shardOf(HELLO, 8))
                .as("shard 6 of 8 is shard 6 of 16: listed once")
                .isEqualTo(6);
    }

    @Test
    void theRelayScansUpToTheWidestCountStillDrainedButNotTheHistory() {
        assertThat(ShardTopology.of(4).scanWidth()).isEqualTo(4);
        assertThat(new ShardTopology(4, new int[] {16, 8}, new int[0]).scanWidth())
                .isEqualTo(16);
        assertThat(new ShardTopology(32, new int[] {16}, new int[0]).scanWidth())
                .isEqualTo(32);
        assertThat(new ShardTopology(4, new int[0], new int[] {64}).scanWidth())
                .as("history only tells where an entry may be found, nothing is drained there")
                .isEqualTo(4);
    }

    @Test
    void anInstanceWithItsOwnCountScansTheWidestOfItTheCountInForceAndTheDrainingOnes() {
        ShardTopology meta = new ShardTopology(8, new int[] {16}, new int[0]);
        assertThat(meta.scanWidth(4)).isEqualTo(16);
        assertThat(meta.scanWidth(32)).as("an instance configured wider").isEqualTo(32);
        assertThat(ShardTopology.of(8).scanWidth(16))
                .as("an older instance still hashing into 16")
                .isEqualTo(16);
        assertThat(meta.recorded()).containsExactly(8, 16);
        assertThat(meta.applied()).as("a read is never a lost write").isTrue();
    }

    @Test
    void aShardCountBelowOneIsRefusedNamingIt() {
        assertThatThrownBy(() -> ShardTopology.of(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("shards must be >= 1, was 0");
        assertThat(ShardTopology.of(1).shards()).isEqualTo(1);
    }

    @Test
    void missingListsAreEmptyAndTheGivenArraysAreCopied() {
        int[] draining = {8};
        int[] history = {4};
        ShardTopology topology = new ShardTopology(16, draining, history);
        draining[0] = 99;
        history[0] = 99;

        assertThat(topology.draining()).containsExactly(8);
        assertThat(topology.history()).containsExactly(4);
        ShardTopology bare = new ShardTopology(2, null, null);
        assertThat(bare.draining()).isEmpty();
        assertThat(bare.history()).isEmpty();
        assertThat(bare.scanWidth()).isEqualTo(2);
    }

    @Test
    void aListFieldKeepsOnlyPositiveCountsOfAtMostSixDigits() {
        assertThat(ShardTopology.parseList("16, 8 ,4")).containsExactly(16, 8, 4);
        assertThat(ShardTopology.parseList("0,-2,x,,007,1234567,999999")).containsExactly(999999);
        assertThat(ShardTopology.parseList(null)).isEmpty();
        assertThat(ShardTopology.parseList("  ")).isEmpty();
        assertThat(ShardTopology.parseList("")).isEmpty();
    }
}
