package io.delayrelay.app.engine.cold;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

import com.github.luben.zstd.Zstd;
import io.delayrelay.app.engine.amqp.IntakeEnvelope;
import io.delayrelay.app.support.Varints;

/**
 * A cold block: entries of one shard, packed column by column (due times as deltas, then members, then payloads) and
 * compressed with zstd. Opaque to Redis and to the scripts: the relay decodes it and hands the entries to
 * {@code cold-promote.lua}.
 *
 * <pre>
 *   byte 2 (format), varint raw length, zstd frame (level 1) of:
 *   varint n, varint first due, n × varint (due - first due), n × (varint length, member),
 *   n × (varint 0 = no payload, or head length + 1, head), then for each entry with a payload (varint length, body)
 * </pre>
 *
 * A payload's head is an AMQP intake envelope's names and properties ({@link IntakeEnvelope#bodyOffset}); its body is
 * the rest (the whole payload when it is not an envelope). Heads next to heads and bodies next to bodies compress
 * better than whole envelopes in a row: 24 B an entry instead of 30 for the bench's JSON intake messages.
 *
 * <p>Format 1 (written before 2026-11-30, still read): level 3, each payload whole in one column:
 * {@code n × (varint 0 = no payload, or length + 1, payload)}.
 */
public final class ColdBlock {

    /** The format byte this class writes. */
    static final byte FORMAT = 2;

    /** The earlier format, still read: payloads whole in one column. */
    static final byte FORMAT_WHOLE_PAYLOADS = 1;

    /**
     * zstd level: 1. On the cold bench's JSON orders it compresses as well as 3 (26.1 against 26.9 B an entry), on
     * intake envelopes better (24.3 against 27.6), and in about half the time (docs/design/cold-tier-choice.md).
     */
    private static final int LEVEL = 1;

    private ColdBlock() {}

    /** One entry: the member, its due time, and its payload (null when scheduled by message). */
    public record Entry(byte[] member, long dueMs, byte[] payload) {}

    public static byte[] encode(List<Entry> entries) {
        List<Entry> sorted = new ArrayList<>(entries);
        sorted.sort(Comparator.comparingLong(Entry::dueMs));
        ByteArrayOutputStream raw = new ByteArrayOutputStream(sorted.size() * 128);
        long first = sorted.isEmpty() ? 0 : sorted.get(0).dueMs();
        Varints.write(raw, sorted.size());
        Varints.write(raw, first);
        for (Entry e : sorted) {
            Varints.write(raw, e.dueMs() - first);
        }
        for (Entry e : sorted) {
            Varints.write(raw, e.member().length);
            raw.writeBytes(e.member());
        }
        for (Entry e : sorted) {
            if (e.payload() == null) {
                Varints.write(raw, 0);
            } else {
                int head = IntakeEnvelope.bodyOffset(e.payload());
                Varints.write(raw, head + 1L);
                raw.write(e.payload(), 0, head);
            }
        }
        for (Entry e : sorted) {
            if (e.payload() != null) {
                int head = IntakeEnvelope.bodyOffset(e.payload());
                Varints.write(raw, e.payload().length - head);
                raw.write(e.payload(), head, e.payload().length - head);
            }
        }
        byte[] plain = raw.toByteArray();
        byte[] packed = Zstd.compress(plain, LEVEL);
        ByteArrayOutputStream out = new ByteArrayOutputStream(packed.length + 6);
        out.write(FORMAT);
        Varints.write(out, plain.length);
        out.writeBytes(packed);
        return out.toByteArray();
    }

    /**
     * @throws IllegalArgumentException when the bytes are not a block of a format this class reads (named in the
     *     message)
     */
    public static List<Entry> decode(byte[] block) {
        if (block.length < 2 || (block[0] != FORMAT && block[0] != FORMAT_WHOLE_PAYLOADS)) {
            throw new IllegalArgumentException("not a cold block of format " + FORMAT_WHOLE_PAYLOADS + " or " + FORMAT
                    + " (" + block.length + " bytes)");
        }
        ByteBuffer head = ByteBuffer.wrap(block, 1, block.length - 1);
        int rawLength = (int) Varints.read(head);
        byte[] packed = new byte[head.remaining()];
        head.get(packed);
        ByteBuffer in = ByteBuffer.wrap(Zstd.decompress(packed, rawLength));
        int n = (int) Varints.read(in);
        long first = Varints.read(in);
        long[] dues = new long[n];
        for (int i = 0; i < n; i++) {
            dues[i] = first + Varints.read(in);
        }
        byte[][] members = new byte[n][];
        for (int i = 0; i < n; i++) {
            members[i] = new byte[(int) Varints.read(in)];
            in.get(members[i]);
        }
        // format 1: the payloads themselves; format 2: their heads, bodies after
        byte[][] payloads = new byte[n][];
        for (int i = 0; i < n; i++) {
            long length = Varints.read(in);
            if (length > 0) {
                payloads[i] = new byte[(int) (length - 1)];
                in.get(payloads[i]);
            }
        }
        if (block[0] == FORMAT) {
            for (int i = 0; i < n; i++) {
                if (payloads[i] != null) {
                    byte[] whole = Arrays.copyOf(payloads[i], payloads[i].length + (int) Varints.read(in));
                    in.get(whole, payloads[i].length, whole.length - payloads[i].length);
                    payloads[i] = whole;
                }
            }
        }
        List<Entry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            entries.add(new Entry(members[i], dues[i], payloads[i]));
        }
        return entries;
    }
}
