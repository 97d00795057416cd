package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Reads pop.lua's reply (see its header) into the results of a round. */
final class PopReply {

    /** pop.lua's reply header of one shard: now, n, nextDue, expired, late; the entries follow, then the late ones. */
    private static final int POP_HEADER = 5;

    private PopReply() {}

    /** pop.lua's reply: {settled, {section, error, ...}, shards, reply of shard 1, reply of shard 2, ...}. */
    static ShardStore.Popped parse(List<?> reply, String token, List<ShardStore.Ack> carried, long receivedNanos) {
        List<?> errors = (List<?>) reply.get(1);
        List<ShardStore.Ack> failed = new ArrayList<>(errors.size() / 2);
        List<String> messages = new ArrayList<>(errors.size() / 2);
        for (int i = 0; i + 1 < errors.size(); i += 2) {
            failed.add(carried.get((int) asLong(errors.get(i)) - 1));
            messages.add(text((byte[]) errors.get(i + 1)));
        }
        int shards = (int) asLong(reply.get(2));
        List<PopResult> results = new ArrayList<>(shards);
        int at = 3;
        for (int g = 0; g < shards; g++) {
            at = parsePop(reply, at, token, results);
        }
        return new ShardStore.Popped(results, asLong(reply.get(0)), failed, messages, receivedNanos);
    }

    /** Parses one shard's pop reply starting at {@code at} into {@code results}; returns where the next one starts. */
    private static int parsePop(List<?> reply, int at, String token, List<PopResult> results) {
        long now = asLong(reply.get(at));
        int n = (int) asLong(reply.get(at + 1));
        long nextDue = asLong(reply.get(at + 2));
        int expired = (int) asLong(reply.get(at + 3));
        int lateCount = (int) asLong(reply.get(at + 4));
        List<PopResult.Entry> entries = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int base = at + POP_HEADER + i * 4;
            byte[] member = (byte[]) reply.get(base);
            long due = parseScore((byte[]) reply.get(base + 1));
            byte[] payload = (byte[]) reply.get(base + 2);
            byte[] attempts = (byte[]) reply.get(base + 3);
            entries.add(new PopResult.Entry(
                    member,
                    due,
                    payload,
                    attempts == null ? 0 : Integer.parseInt(new String(attempts, StandardCharsets.US_ASCII))));
        }
        List<PopResult.Late> late = lateCount == 0 ? List.of() : new ArrayList<>(lateCount);
        for (int i = 0; i < lateCount; i++) {
            int base = at + POP_HEADER + n * 4 + i * 3;
            byte[] expiry = (byte[]) reply.get(base + 2);
            late.add(new PopResult.Late(
                    (byte[]) reply.get(base),
                    parseScore((byte[]) reply.get(base + 1)),
                    expiry == null || expiry.length == 0 ? -1 : parseScore(expiry)));
        }
        results.add(new PopResult(now, entries, nextDue, token, expired, late));
        return at + POP_HEADER + n * 4 + lateCount * 3;
    }

    /** A score as Redis prints it, in whole ms: a fraction counts as the next ms, so nothing is released early. */
    static long parseScore(byte[] score) {
        // Scores are whole milliseconds, which Redis prints as plain digits: read them without a String or a
        // double parse; anything else (exponent, fraction, inf) takes the general path, where a fraction (a raw
        // ZADD's) counts as the next whole ms: due only once reached (as ShardPeeks.dueMs), never released before.
        int length = score.length;
        if (length > 0 && length <= 18) {
            int i = score[0] == '-' ? 1 : 0;
            long value = 0;
            boolean digits = i < length;
            for (; i < length && digits; i++) {
                int d = score[i] - '0';
                digits = d >= 0 && d <= 9;
                value = value * 10 + d;
            }
            if (digits) {
                return score[0] == '-' ? -value : value;
            }
        }
        String text = new String(score, StandardCharsets.US_ASCII);
        switch (text) {
            case "inf", "+inf":
                return Long.MAX_VALUE;
            case "-inf":
                return Long.MIN_VALUE;
            default:
                return (long) Math.ceil(Double.parseDouble(text));
        }
    }

    private static String text(byte[] value) {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    static long asLong(Object value) {
        return ((Number) value).longValue();
    }
}
