package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Consumer;

import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the {@link RelayEvents} listener (metrics) what the engine did, through one guard: a failing listener is
 * logged at debug and never reaches the message path. Events an operator must also see in the log (dead letters,
 * expired leases) are logged here once, whoever reports them.
 */
final class EventReporter {

    private static final Logger log = LoggerFactory.getLogger(EventReporter.class);
    private static final int PREVIEW_BYTES = 64;

    private final RelayEvents events;

    EventReporter(RelayEvents events) {
        this.events = events;
    }

    /** Calls the listener; whatever it throws is logged and dropped. */
    void emit(BusinessSpec spec, int shard, Consumer<RelayEvents> event) {
        try {
            event.accept(events);
        } catch (RuntimeException e) {
            log.debug("business={} shard={}: relay event listener failed", spec.name(), shard, e);
        }
    }

    void error(BusinessSpec spec, int shard, Throwable error) {
        emit(spec, shard, e -> e.error(spec, shard, error));
    }

    void deadLettered(BusinessSpec spec, int shard, DeadReason category, String reason, List<byte[]> dead) {
        if (dead.isEmpty()) {
            return;
        }
        log.error(
                "business={} shard={}: {} message(s) dead-lettered to {}: {}; first member: {}",
                spec.name(),
                shard,
                dead.size(),
                spec.keys().dead(shard),
                reason,
                preview(dead.get(0)));
        emit(spec, shard, e -> e.deadLettered(spec, shard, category, dead.size()));
    }

    void leaseExpired(BusinessSpec spec, int shard, int count) {
        if (count == 0) {
            return;
        }
        log.warn(
                "business={} shard={}: {} entries' lease expired unconfirmed; put back for redelivery",
                spec.name(),
                shard,
                count);
        emit(spec, shard, e -> e.leaseExpired(spec, shard, count));
    }

    /** At most 64 bytes of a member, for logs: members are data, never logged in full. */
    static String preview(byte[] member) {
        String text = new String(member, 0, Math.min(member.length, PREVIEW_BYTES), StandardCharsets.UTF_8);
        return "'" + text.replaceAll("\\p{Cntrl}", "?") + "'"
                + (member.length > PREVIEW_BYTES ? "... (" + member.length + " bytes)" : "");
    }
}
