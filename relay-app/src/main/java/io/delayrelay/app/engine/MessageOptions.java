package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Per-message options of the Redis contract v2 (docs/redis-contract.md, "Per-message options"): contract v2's
 * schedule.lua stores a message scheduled by id with options as an envelope in {@code {K:i}:payloads}:
 *
 * <pre>
 * 0xFF "DR2:" [expiry epoch ms] ":" count ":" (name-bytes ":" name value-bytes ":" value){count} message
 * </pre>
 *
 * The relay publishes {@code message} as the body and the headers beside its own; pop.lua reads the expiry. A
 * payload that does not start with {@code 0xFF "DR2:"} is a message without options (every v1 payload). A header
 * named like one the relay sets ({@code x-delay-*}) is never published (the scripts refuse it; one written into
 * Redis by hand is ignored, logged and counted); an envelope that does not parse is published whole as the body,
 * logged and counted (nothing lost).
 *
 * @param message   the bytes to publish
 * @param expiresAtMs the expiry, epoch ms, or -1 for none
 * @param headers   AMQP headers to publish, in the producer's order
 * @param refused   header names ignored because the relay sets them
 * @param problem   why the envelope could not be read (then {@code message} is the whole payload), or null
 */
public record MessageOptions(
        byte[] message, long expiresAtMs, Map<String, String> headers, List<String> refused, String problem) {

    /** The prefix that marks an envelope: 0xFF (never in UTF-8 text), "DR2:". */
    static final byte[] MAGIC = {(byte) 0xFF, 'D', 'R', '2', ':'};

    /** The header prefix the relay owns: a producer's header of that name is never published. */
    public static final String RELAY_HEADER_PREFIX = "x-delay-";

    /** Whether the payload carries options (starts with the envelope's prefix). */
    public static boolean isEnvelope(byte[] payload) {
        if (payload == null || payload.length < MAGIC.length) {
            return false;
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (payload[i] != MAGIC[i]) {
                return false;
            }
        }
        return true;
    }

    /** The envelope of a message with headers and no expiry, as contract v2's schedule.lua writes it. */
    public static byte[] envelope(Map<String, String> headers, byte[] message) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(64 + message.length);
        out.writeBytes(MAGIC);
        out.writeBytes((":" + headers.size() + ":").getBytes(StandardCharsets.US_ASCII));
        headers.forEach((name, value) -> {
            byte[] n = name.getBytes(StandardCharsets.UTF_8);
            byte[] v = value.getBytes(StandardCharsets.UTF_8);
            out.writeBytes((n.length + ":").getBytes(StandardCharsets.US_ASCII));
            out.writeBytes(n);
            out.writeBytes((v.length + ":").getBytes(StandardCharsets.US_ASCII));
            out.writeBytes(v);
        });
        out.writeBytes(message);
        return out.toByteArray();
    }

    /** Reads a payload: its options when it is an envelope, else the payload itself without options. */
    public static MessageOptions read(byte[] payload) {
        if (!isEnvelope(payload)) {
            return new MessageOptions(payload, -1, Map.of(), List.of(), null);
        }
        try {
            Reader r = new Reader(payload, MAGIC.length);
            String expiryText = r.until(':');
            long expiry = expiryText.isEmpty() ? -1 : Long.parseLong(expiryText);
            int count = Integer.parseInt(r.until(':'));
            if (count < 0 || count > payload.length) {
                throw new IllegalArgumentException("header count " + count);
            }
            Map<String, String> headers = new LinkedHashMap<>();
            List<String> refused = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String name = r.counted();
                String value = r.counted();
                if (name.toLowerCase(Locale.ROOT).startsWith(RELAY_HEADER_PREFIX)) {
                    refused.add(name);
                } else {
                    headers.put(name, value);
                }
            }
            return new MessageOptions(
                    Arrays.copyOfRange(payload, r.at, payload.length), expiry, headers, List.copyOf(refused), null);
        } catch (RuntimeException e) {
            return new MessageOptions(payload, -1, Map.of(), List.of(), "unreadable options envelope (" + e + ")");
        }
    }

    private static final class Reader {
        final byte[] in;
        int at;

        Reader(byte[] in, int at) {
            this.in = in;
            this.at = at;
        }

        /** The ASCII text up to {@code end} (at most 20 characters), which is skipped. */
        String until(char end) {
            int start = at;
            while (at < in.length && in[at] != end) {
                if (at - start > 20) {
                    throw new IllegalArgumentException("no '" + end + "' at " + start);
                }
                at++;
            }
            if (at >= in.length) {
                throw new IllegalArgumentException("truncated at " + start);
            }
            return new String(in, start, at++ - start, StandardCharsets.US_ASCII);
        }

        /** A length-prefixed UTF-8 string: {@code <bytes>:<bytes of text>}. */
        String counted() {
            int length = Integer.parseInt(until(':'));
            if (length < 0 || at + length > in.length) {
                throw new IllegalArgumentException("length " + length + " at " + at);
            }
            String text = new String(in, at, length, StandardCharsets.UTF_8);
            at += length;
            return text;
        }
    }
}
