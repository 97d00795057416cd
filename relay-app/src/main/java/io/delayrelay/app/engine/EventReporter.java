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
    /** Members named in one log line of late entries (a storm after an outage takes a batch per pop). */
    private static final int LATE_MEMBERS_LOGGED = 10;

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

    /** Entries a pop found past the late policy: dead-lettered with reason expired, or dropped (on-late: drop). */
    void late(BusinessSpec spec, int shard, boolean dropped, List<PopResult.Late> late) {
        if (late.isEmpty()) {
            return;
        }
        StringBuilder members = new StringBuilder();
        int shown = Math.min(late.size(), LATE_MEMBERS_LOGGED);
        for (int i = 0; i < shown; i++) {
            PopResult.Late l = late.get(i);
            members.append(i == 0 ? "" : ", ")
                    .append(preview(l.member()))
                    .append(" (due ")
                    .append(l.dueAtMs())
                    .append(l.expiresAtMs() >= 0 ? ", expiry " + l.expiresAtMs() : "")
                    .append(')');
        }
        if (late.size() > shown) {
            members.append(", and ").append(late.size() - shown).append(" more");
        }
        String why = spec.late().maxLateness() == null
                ? "past their expiry"
                : "past max-lateness " + spec.late().maxLateness() + " or their expiry";
        if (dropped) {
            log.warn(
                    "business={} shard={}: {} late message(s) dropped unpublished ({}, on-late: drop): {}",
                    spec.name(),
                    shard,
                    late.size(),
                    why,
                    members);
            emit(spec, shard, e -> e.dropped(spec, shard, DeadReason.EXPIRED, late.size()));
        } else {
            log.warn(
                    "business={} shard={}: {} late message(s) dead-lettered to {} with reason expired ({}): {}",
                    spec.name(),
                    shard,
                    late.size(),
                    spec.keys().dead(shard),
                    why,
                    members);
            emit(spec, shard, e -> e.deadLettered(spec, shard, DeadReason.EXPIRED, late.size()));
        }
    }

    /** Options of a message the relay did not apply (headers it sets itself, an envelope it cannot read). */
    void optionsIgnored(BusinessSpec spec, int shard, byte[] member, MessageOptions options) {
        if (options.problem() != null) {
            log.warn(
                    "business={} shard={}: member {}: {}; published the payload whole as the body",
                    spec.name(),
                    shard,
                    preview(member),
                    options.problem());
            emit(spec, shard, e -> e.optionsIgnored(spec, shard, "malformed", 1));
        }
        if (!options.refused().isEmpty()) {
            log.warn(
                    "business={} shard={}: member {}: header(s) {} not published: the relay sets x-delay-* headers"
                            + " itself",
                    spec.name(),
                    shard,
                    preview(member),
                    options.refused());
            emit(
                    spec,
                    shard,
                    e -> e.optionsIgnored(
                            spec, shard, "relay-header", options.refused().size()));
        }
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
