package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/** Turns what one pop returned into the messages to publish, each with its stable message id. */
final class DueBatch {

    private DueBatch() {}

    static List<DueMessage> of(BusinessSpec spec, int shard, PopResult popped) {
        List<DueMessage> batch = new ArrayList<>(popped.entries().size());
        for (PopResult.Entry entry : popped.entries()) {
            boolean byId = entry.payload() != null;
            batch.add(new DueMessage(
                    spec.name(),
                    shard,
                    entry.member(),
                    byId ? entry.payload() : entry.member(),
                    byId,
                    entry.dueAtMs(),
                    popped.redisNowMs(),
                    entry.attempts() + 1,
                    messageId(spec.name(), entry.member(), entry.dueAtMs())));
        }
        return batch;
    }

    /** Stable across redeliveries of one scheduled entry: a name-based UUID of business, member and due time. */
    static String messageId(String business, byte[] member, long dueAtMs) {
        byte[] name = business.getBytes(StandardCharsets.UTF_8);
        byte[] due = Long.toString(dueAtMs).getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[name.length + 1 + member.length + 1 + due.length];
        System.arraycopy(name, 0, all, 0, name.length);
        System.arraycopy(member, 0, all, name.length + 1, member.length);
        System.arraycopy(due, 0, all, name.length + 2 + member.length, due.length);
        return UUID.nameUUIDFromBytes(all).toString();
    }
}
