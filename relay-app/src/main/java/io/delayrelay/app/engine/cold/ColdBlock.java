package io.delayrelay.app.engine.cold;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import com.github.luben.zstd.Zstd;

/**
 * A cold block: entries of one shard, packed column by column (due times as deltas, then members, then payloads) and
 * compressed with zstd. Opaque to Redis and to the scripts: the relay decodes it and hands the entries to
 * {@code cold-promote.lua}.
 *
 * <pre>
 *   byte 1 (format), varint raw length, zstd frame of:
 *   varint n, varint first due, n × varint (due - first due), n × (varint length, member),
 *   n × (varint 0 = no payload, or length + 1, payload)
 * </pre>
 */
public final class ColdBlock {

    /** The format byte this class writes and reads. */
    static final byte FORMAT = 1;

    /** zstd level: 3 is zstd's default, ~4 µs an entry here (docs/design/cold-tier-choice.md). */
    private static final int LEVEL = 3;

    private ColdBlock() {}

    /** One entry: the member, its due time, and its payload (null when scheduled by message). */
    public record Entry(byte[] member, long dueMs, byte[] payload) {}

    public static byte[] encode(List<Entry> entries) {
        List<Entry> sorted = new ArrayList<>(entries);
        sorted.sort(Comparator.comparingLong(Entry::dueMs));
        ByteArrayOutputStream raw = new ByteArrayOutputStream(sorted.size() * 128);
        long first = sorted.isEmpty() ? 0 : sorted.get(0).dueMs();
        varint(raw, sorted.size());
        varint(raw, first);
        for (Entry e : sorted) {
            varint(raw, e.dueMs() - first);
        }
        for (Entry e : sorted) {
            varint(raw, e.member().length);
            raw.writeBytes(e.member());
        }
        for (Entry e : sorted) {
            if (e.payload() == null) {
                varint(raw, 0);
            } else {
                varint(raw, e.payload().length + 1L);
                raw.writeBytes(e.payload());
            }
        }
        byte[] plain = raw.toByteArray();
        byte[] packed = Zstd.compress(plain, LEVEL);
        ByteArrayOutputStream out = new ByteArrayOutputStream(packed.length + 6);
        out.write(FORMAT);
        varint(out, plain.length);
        out.writeBytes(packed);
        return out.toByteArray();
    }

    /**
     * @throws IllegalArgumentException when the bytes are not a block of this format (named in the message)
     */
    public static List<Entry> decode(byte[] block) {
        if (block.length < 2 || block[0] != FORMAT) {
            throw new IllegalArgumentException(
                    "not a cold block of format " + FORMAT + " (" + block.length + " bytes)");
        }
        ByteBuffer head = ByteBuffer.wrap(block, 1, block.length - 1);
        int rawLength = (int) varint(head);
        byte[] packed = new byte[head.remaining()];
        head.get(packed);
        ByteBuffer in = ByteBuffer.wrap(Zstd.decompress(packed, rawLength));
        int n = (int) varint(in);
        long first = varint(in);
        long[] dues = new long[n];
        for (int i = 0; i < n; i++) {
            dues[i] = first + varint(in);
        }
        byte[][] members = new byte[n][];
        for (int i = 0; i < n; i++) {
            members[i] = new byte[(int) varint(in)];
            in.get(members[i]);
        }
        List<Entry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long length = varint(in);
            byte[] payload = null;
            if (length > 0) {
                payload = new byte[(int) (length - 1)];
                in.get(payload);
            }
            entries.add(new Entry(members[i], dues[i], payload));
        }
        return entries;
    }

    private static void varint(ByteArrayOutputStream out, long value) {
        long v = value;
        while ((v & ~0x7fL) != 0) {
            out.write((int) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    private static long varint(ByteBuffer in) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte b = in.get();
            value |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalArgumentException("cold block: varint longer than 64 bits");
    }
}
