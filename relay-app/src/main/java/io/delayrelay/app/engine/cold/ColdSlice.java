package io.delayrelay.app.engine.cold;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Entries of one cold block as {@code cold-demote.lua} and {@code cold-promote.lua} take them: grouped by the part of
 * the member index each member belongs to (computed here, so the scripts hash nothing), and cut into slices of a
 * bounded size (so that no script call holds Redis for long). The part of a member is the one the contract scripts
 * compute in Lua: the first 24 bits of SHA-1(member), modulo the shard's fan-out (docs/cold-tier.md).
 */
final class ColdSlice {

    private static final ThreadLocal<MessageDigest> SHA1 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-1");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    });

    /** The entries, grouped by part (parts ascending, the listed order within a part). */
    final List<ColdBlock.Entry> entries;

    private final int[] parts;

    private ColdSlice(List<ColdBlock.Entry> entries, int[] parts) {
        this.entries = entries;
        this.parts = parts;
    }

    /** The member index part of {@code member} for a fan-out: first 24 bits of its SHA-1 modulo {@code fan}. */
    static int part(byte[] member, int fan) {
        byte[] h = SHA1.get().digest(member);
        return (((h[0] & 0xff) << 16) | ((h[1] & 0xff) << 8) | (h[2] & 0xff)) % fan;
    }

    static ColdSlice of(List<ColdBlock.Entry> entries, int fan) {
        int n = entries.size();
        Integer[] order = new Integer[n];
        int[] partOf = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
            partOf[i] = part(entries.get(i).member(), fan);
        }
        Arrays.sort(order, Comparator.comparingInt(i -> partOf[i]));
        List<ColdBlock.Entry> grouped = new ArrayList<>(n);
        int[] parts = new int[n];
        for (int i = 0; i < n; i++) {
            grouped.add(entries.get(order[i]));
            parts[i] = partOf[order[i]];
        }
        return new ColdSlice(grouped, parts);
    }

    int size() {
        return entries.size();
    }

    /** Consecutive slices of at most {@code max} entries (one empty slice when there is no entry). */
    List<ColdSlice> slices(int max) {
        List<ColdSlice> out = new ArrayList<>();
        for (int from = 0; from < size() || from == 0; from += max) {
            int to = Math.min(size(), from + max);
            out.add(new ColdSlice(entries.subList(from, to), Arrays.copyOfRange(parts, from, to)));
            if (to == size()) {
                break;
            }
        }
        return out;
    }

    /**
     * The script's ARGV: {@code head}, then the parts (4 bytes each: part, members in it; big-endian), the flags
     * ('1' has a payload, '0' none), the members, their due times and their payloads ('' when none).
     */
    Object[] args(byte[][] head) {
        int n = size();
        Object[] args = new Object[head.length + 2 + 3 * n];
        System.arraycopy(head, 0, args, 0, head.length);
        byte[] flags = new byte[n];
        byte[] runs = new byte[4 * n];
        int r = 0;
        int base = head.length + 2;
        for (int i = 0; i < n; i++) {
            ColdBlock.Entry e = entries.get(i);
            if (i == 0 || parts[i] != parts[i - 1]) {
                runs[r] = (byte) (parts[i] >>> 8);
                runs[r + 1] = (byte) parts[i];
                r += 4;
            }
            int count = ((runs[r - 2] & 0xff) << 8 | (runs[r - 1] & 0xff)) + 1;
            runs[r - 2] = (byte) (count >>> 8);
            runs[r - 1] = (byte) count;
            flags[i] = e.payload() == null ? (byte) '0' : (byte) '1';
            args[base + i] = e.member();
            args[base + n + i] = Long.toString(e.dueMs()).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            args[base + 2 * n + i] = e.payload() == null ? new byte[0] : e.payload();
        }
        args[head.length] = Arrays.copyOf(runs, r);
        args[head.length + 1] = flags;
        return args;
    }
}
