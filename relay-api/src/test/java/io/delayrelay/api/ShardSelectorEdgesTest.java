package io.delayrelay.api;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The smallest shard counts: one shard holds every key; fewer than one is refused naming the count. */
class ShardSelectorEdgesTest {

    @Test
    void withOneShardEveryKeyGoesToShardZero() {
        assertThat(ShardSelector.shardOf("hello", 1)).isZero();
        assertThat(ShardSelector.shardOf(new byte[] {(byte) 0xff, (byte) 0xfe}, 1))
                .isZero();
    }

    @Test
    void aNegativeShardCountIsRefusedNamingIt() {
        assertThatThrownBy(() -> ShardSelector.shardOf(new byte[] {1}, -3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("shards must be >= 1, was -3");
    }
}
