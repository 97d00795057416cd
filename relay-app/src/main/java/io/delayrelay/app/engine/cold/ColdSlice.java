package io.delayrelay.app.engine.cold;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Entries of one cold block as {@code cold-demote.lua} and {@code cold-promote.lua} take them: grouped by the part of
 * the member index each member belongs to (computed here, so the scripts hash nothing), and cut into slices of a
 * bounded size (so that no script call holds Redis for long). The part of a member is the one the contract scripts
 * compute in Lua: the first 24 bits of SHA-1(member), modulo the shard's fan-out (docs/cold-tier.md). A member over
 * {@link #EXACT_MAX} bytes (or starting with byte 0xFF) has a digest field in the index under the rule {@code ix=2}:
 * byte 0xFF and bytes 4-11 of its SHA-1, computed here too.
 */
final class ColdSlice {

    private static final ThreadLocal<MessageDigest> SHA1 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-1");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    });

    /** Members of at most this many bytes (not starting with 0xFF) are their own index field. */
    static final int EXACT_MAX = 32;

    private static final byte[] NONE = new byte[0];

    /** The entries, grouped by part (parts ascending, the listed order within a part). */
    final List<ColdBlock.Entry> entries;

    private final int[] parts;

    private final byte[][] digests;

    private ColdSlice(List<ColdBlock.Entry> entries, int[] parts, byte[][] digests) {
        this.entries = entries;
        this.parts = parts;
        this.digests = digests;
    }

    /** The member index part of {@code member} for a fan-out: first 24 bits of its SHA-1 modulo {@code fan}. */
    static int part(byte[] member, int fan) {
        return partOfSha1(SHA1.get().digest(member), fan);
    }

    private static int partOfSha1(byte[] sha1, int fan) {
        return (((sha1[0] & 0xff) << 16) | ((sha1[1] & 0xff) << 8) | (sha1[2] & 0xff)) % fan;
    }

    /**
     * {@code entries} without those whose digest field another entry before them has: a digest stands for one cold
     * member at a time, so a block never holds two (the later ones stay hot and go into another block).
     */
    static List<ColdBlock.Entry> distinctDigests(List<ColdBlock.Entry> entries) {
        Set<ByteBuffer> seen = new HashSet<>();
        List<ColdBlock.Entry> out = new ArrayList<>(entries.size());
        for (ColdBlock.Entry e : entries) {
            if (!digested(e.member()) || seen.add(ByteBuffer.wrap(digest(e.member())))) {
                out.add(e);
            }
        }
        return out;
    }

    /** Whether {@code member} has a digest field (rule 2): over {@link #EXACT_MAX} bytes or starting with 0xFF. */
    static boolean digested(byte[] member) {
        return member.length > EXACT_MAX || (member.length > 0 && member[0] == (byte) 0xFF);
    }

    /** The digest field of {@code member} under rule 2 (0xFF, then bytes 4-11 of its SHA-1), or empty. */
    static byte[] digest(byte[] member) {
        return digested(member) ? digestOfSha1(SHA1.get().digest(member)) : NONE;
    }

    private static byte[] digestOfSha1(byte[] sha1) {
        byte[] field = new byte[9];
        field[0] = (byte) 0xFF;
        System.arraycopy(sha1, 3, field, 1, 8);
        return field;
    }

    static ColdSlice of(List<ColdBlock.Entry> entries, int fan) {
        int n = entries.size();
        Integer[] order = new Integer[n];
        int[] partOf = new int[n];
        byte[][] digestOf = new byte[n][];
        for (int i = 0; i < n; i++) {
            order[i] = i;
            byte[] member = entries.get(i).member();
            byte[] sha1 = SHA1.get().digest(member);
            partOf[i] = partOfSha1(sha1, fan);
            digestOf[i] = digested(member) ? digestOfSha1(sha1) : NONE;
        }
        Arrays.sort(order, Comparator.comparingInt(i -> partOf[i]));
        List<ColdBlock.Entry> grouped = new ArrayList<>(n);
        int[] parts = new int[n];
        byte[][] digests = new byte[n][];
        for (int i = 0; i < n; i++) {
            grouped.add(entries.get(order[i]));
            parts[i] = partOf[order[i]];
            digests[i] = digestOf[order[i]];
        }
        return new ColdSlice(grouped, parts, digests);
    }

    int size() {
        return entries.size();
    }

    /** Consecutive slices of at most {@code max} entries (one empty slice when there is no entry). */
    List<ColdSlice> slices(int max) {
        List<ColdSlice> out = new ArrayList<>();
        for (int from = 0; from < size() || from == 0; from += max) {
            int to = Math.min(size(), from + max);
            out.add(new ColdSlice(
                    entries.subList(from, to),
                    Arrays.copyOfRange(parts, from, to),
                    Arrays.copyOfRange(digests, from, to)));
            if (to == size()) {
                break;
            }
        }
        return out;
    }

    /**
     * The script's ARGV: {@code head}, then the parts (4 bytes each: part, members in it; big-endian), the flags
     * ('1' has a payload, '0' none), the members, their due times, their payloads ('' when none) and their digest
     * fields ('' when the member is its own field), these only when a member of the slice has one.
     */
    Object[] args(byte[][] head) {
        int n = size();
        boolean anyDigest = false;
        for (byte[] d : digests) {
            anyDigest |= d.length > 0;
        }
        Object[] args = new Object[head.length + 2 + (anyDigest ? 4 : 3) * n];
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
            args[base + 2 * n + i] = e.payload() == null ? NONE : e.payload();
            if (anyDigest) {
                args[base + 3 * n + i] = digests[i];
            }
        }
        args[head.length] = Arrays.copyOf(runs, r);
        args[head.length + 1] = flags;
        return args;
    }
}
