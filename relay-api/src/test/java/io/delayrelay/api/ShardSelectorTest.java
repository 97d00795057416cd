package io.delayrelay.api;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The published test vectors (docs/redis-contract.md): other languages must produce the same numbers. */
class ShardSelectorTest {

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "hello            | 907060870 | 6  | 2",
                "order-1001       | 230890041 | 9  | 4",
                "user:42:reminder | 416469919 | 15 | 5",
                "order-1003       | 3821894421 | 5 | 2",
                "héllo wörld      | 354246585 | 9  | 0",
            })
    void matchesThePublishedVectors(String key, long crc, int shardOf16, int shardOf7) {
        assertThat(ShardSelector.crc32(key.getBytes(StandardCharsets.UTF_8))).isEqualTo(crc);
        assertThat(ShardSelector.shardOf(key, 16)).isEqualTo(shardOf16);
        assertThat(ShardSelector.shardOf(key, 7)).isEqualTo(shardOf7);
    }

    @Test
    void usesTheUnsignedValueForKeysWithTheHighBitSet() {
        byte[] key = {(byte) 0xff, (byte) 0xfe};
        long crc = ShardSelector.crc32(key);
        assertThat(crc).isGreaterThan(Integer.MAX_VALUE);
        assertThat(ShardSelector.shardOf(key, 1000)).isEqualTo((int) (crc % 1000));
    }

    @Test
    void rejectsShardCountsBelowOne() {
        assertThatThrownBy(() -> ShardSelector.shardOf("x", 0)).hasMessage("shards must be >= 1, was 0");
    }
}
