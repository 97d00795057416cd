package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * The shard rule every producer must follow: {@code CRC32(UTF-8 bytes of the sharding key) mod M}, the CRC32
 * taken as an unsigned 32-bit number. The sharding key is the id for entries scheduled by id, otherwise the
 * message itself.
 *
 * <p>Test vector: {@code "hello"} has CRC32 {@code 0x3610A686} (907060870), so shard 6 of 16. More in docs/redis-contract.md.
 */
public final class ShardSelector {

    private ShardSelector() {}

    /** Unsigned CRC32 of the bytes. */
    public static long crc32(byte[] key) {
        CRC32 crc = new CRC32();
        crc.update(key, 0, key.length);
        return crc.getValue();
    }

    /** The shard in {@code [0, shards)} for the key bytes. */
    public static int shardOf(byte[] key, int shards) {
        if (shards < 1) {
            throw new IllegalArgumentException("shards must be >= 1, was " + shards);
        }
        return (int) (crc32(key) % shards);
    }

    /** The shard for a key given as text (UTF-8 encoded). */
    public static int shardOf(String key, int shards) {
        return shardOf(key.getBytes(StandardCharsets.UTF_8), shards);
    }
}
