package io.delayrelay.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Benchmark messages: fixed size, unique, and carrying their due time so a consumer can compute lag for any
 * implementation: {@code <due-ms 13 digits>:<seq 10 digits>:xxxx...}.
 */
final class Messages {

    private Messages() {}

    static byte[] body(long dueMs, long seq, int size) {
        byte[] body = new byte[Math.max(size, 25)];
        Arrays.fill(body, (byte) 'x');
        digits(body, 0, 13, dueMs);
        body[13] = ':';
        digits(body, 14, 10, seq);
        body[24] = ':';
        return body;
    }

    private static void digits(byte[] into, int from, int width, long value) {
        for (int i = from + width - 1; i >= from; i--) {
            into[i] = (byte) ('0' + value % 10);
            value /= 10;
        }
    }

    static long dueOf(byte[] body) {
        long v = 0;
        for (int i = 0; i < 13; i++) {
            v = v * 10 + (body[i] - '0');
        }
        return v;
    }

    static long seqOf(byte[] body) {
        long v = 0;
        for (int i = 14; i < 24; i++) {
            v = v * 10 + (body[i] - '0');
        }
        return v;
    }

    /** Due times for n messages: all at {@code t}, or spread evenly over [t, t + spreadMs). */
    static long[] dues(int n, long t, long spreadMs) {
        long[] dues = new long[n];
        for (int i = 0; i < n; i++) {
            dues[i] = spreadMs == 0 ? t : t + (spreadMs * i) / n;
        }
        return dues;
    }

    static List<byte[]> bodies(long[] dues, int size, long seqBase) {
        List<byte[]> bodies = new ArrayList<>(dues.length);
        for (int i = 0; i < dues.length; i++) {
            bodies.add(body(dues[i], seqBase + i, size));
        }
        return bodies;
    }
}
