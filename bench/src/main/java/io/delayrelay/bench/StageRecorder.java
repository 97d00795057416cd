package io.delayrelay.bench;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/**
 * The relay-side instants of each relayed message (due, popped, confirmed; Redis time), by message id, for the lag
 * breakdown. Registered as the relay's RelayEvents bean in the bench's relay contexts.
 */
final class StageRecorder implements RelayEvents {

    /** due, popped and confirmed instants of one message, epoch ms. */
    record Stamps(long dueMs, long poppedMs, long confirmedMs) {}

    static final Map<String, Stamps> STAMPS = new ConcurrentHashMap<>();

    /** Off during drains: they do not use the stamps, and recording them would count as the relay's CPU. */
    static volatile boolean enabled = true;

    @Override
    public void relayed(BusinessSpec spec, int shard, List<DueMessage> messages, long confirmedAtMs) {
        if (!enabled) {
            return;
        }
        for (DueMessage m : messages) {
            STAMPS.putIfAbsent(m.messageId(), new Stamps(m.dueAtMs(), m.poppedAtMs(), confirmedAtMs));
        }
    }
}
