package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/** Turns what one pop returned into the messages to publish, each with its stable message id. */
final class DueBatch {

    /** One MD5 per thread, reused: looking one up per message cost a provider search and a reflective construction. */
    private static final ThreadLocal<MessageDigest> MD5 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("MD5 not supported", e);
        }
    });

    private DueBatch() {}

    static List<DueMessage> of(BusinessSpec spec, int shard, PopResult popped) {
        return of(spec, shard, popped, null);
    }

    /**
     * The batch's messages; a payload with per-message options (contract v2) gives its message as the body and its
     * headers. Headers the relay refused and envelopes it could not read are reported to {@code events} (if any).
     */
    static List<DueMessage> of(BusinessSpec spec, int shard, PopResult popped, EventReporter events) {
        List<DueMessage> batch = new ArrayList<>(popped.entries().size());
        byte[] business = spec.name().getBytes(StandardCharsets.UTF_8);
        for (PopResult.Entry entry : popped.entries()) {
            boolean byId = entry.payload() != null;
            byte[] body = byId ? entry.payload() : entry.member();
            Map<String, String> headers = Map.of();
            DueMessage.Slot slot = null;
            String messageId = null;
            if (byId && ScheduleStamp.isStamped(body)) {
                ScheduleStamp.Read stamp = ScheduleStamp.read(body);
                if (stamp != null) {
                    slot = stamp.slot();
                    body = stamp.payload();
                    // stable per slot: the entry's id is the schedule's name and the slot time
                    messageId = new String(entry.member(), StandardCharsets.UTF_8);
                }
            }
            if (byId && MessageOptions.isEnvelope(body)) {
                MessageOptions options = MessageOptions.read(body);
                body = options.message();
                headers = options.headers();
                if (events != null) {
                    events.optionsIgnored(spec, shard, entry.member(), options);
                }
            }
            batch.add(new DueMessage(
                    spec.name(),
                    shard,
                    entry.member(),
                    body,
                    byId,
                    entry.dueAtMs(),
                    popped.redisNowMs(),
                    entry.attempts() + 1,
                    messageId != null ? messageId : messageId(business, entry.member(), entry.dueAtMs()),
                    headers,
                    slot));
        }
        return batch;
    }

    /** Stable across redeliveries of one scheduled entry: a name-based UUID of business, member and due time. */
    static String messageId(String business, byte[] member, long dueAtMs) {
        return messageId(business.getBytes(StandardCharsets.UTF_8), member, dueAtMs);
    }

    /**
     * {@code UUID.nameUUIDFromBytes(business + 0 + member + 0 + dueAtMs)} (the id every earlier version gave), without
     * concatenating the name or looking up an MD5 per message.
     */
    private static String messageId(byte[] business, byte[] member, long dueAtMs) {
        MessageDigest md5 = MD5.get();
        md5.update(business);
        md5.update((byte) 0);
        md5.update(member);
        md5.update((byte) 0);
        byte[] due = new byte[20];
        int at = due.length;
        long v = dueAtMs;
        boolean negative = v < 0;
        do {
            due[--at] = (byte) ('0' + Math.abs(v % 10));
            v /= 10;
        } while (v != 0);
        if (negative) {
            due[--at] = '-';
        }
        md5.update(due, at, due.length - at);
        byte[] hash = md5.digest();
        hash[6] = (byte) ((hash[6] & 0x0f) | 0x30); // version 3, as nameUUIDFromBytes
        hash[8] = (byte) ((hash[8] & 0x3f) | 0x80); // IETF variant
        long msb = 0;
        long lsb = 0;
        for (int i = 0; i < 8; i++) {
            msb = (msb << 8) | (hash[i] & 0xff);
            lsb = (lsb << 8) | (hash[8 + i] & 0xff);
        }
        return new UUID(msb, lsb).toString();
    }
}
