package io.delayrelay.app.schedule;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.MessageOptions;
import io.delayrelay.app.engine.ScheduleStamp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * One tend of a claimed schedule: withdraws its pending entry when it must (paused, redefined, or overdue because no
 * relay ran), plans with {@link SlotPlanner}, and writes the plan in one conditional script. Counts and logs every
 * slot it skips.
 */
final class ScheduleTender {

    private static final Logger log = LoggerFactory.getLogger(ScheduleTender.class);

    private final ScheduleStore store;
    private final ScheduleMetrics metrics;

    ScheduleTender(ScheduleStore store, ScheduleMetrics metrics) {
        this.store = store;
        this.metrics = metrics;
    }

    /** A tend planned, to be written with the batch's others, then {@linkplain #finish finished}. */
    record Prepared(ScheduleDefinition def, SlotPlan plan, ScheduleStore.Tend tend) {}

    /**
     * Plans the tend of schedule {@code def} (claimed with state {@code claimed}) at Redis time {@code nowMs}. A
     * withdrawal or a requested delete is done now (a script call of its own, rare).
     *
     * @return the tend to write, or null when there is nothing to write (deleted, or tended meanwhile)
     */
    Prepared prepare(DelayQueueKeys keys, ScheduleDefinition def, ScheduleStore.Claimed claimed, long nowMs) {
        Map<String, String> state = claimed.state();
        String cursor = state.getOrDefault("cursor", "");
        String pending = state.getOrDefault("pending", "");
        boolean paused = def.paused() || !state.getOrDefault("paused-by", "").isEmpty();
        String fingerprint = def.fingerprint();
        MDC.put("business", def.business());
        try {
            if (def.runtime() && "1".equals(state.get("delete-requested"))) {
                ScheduleStore.Withdrawal w = store.delete(keys, def.name());
                log.info(
                        "schedule {}: deleted as requested{}",
                        def.name(),
                        w.withdrawn() ? ", its pending slot withdrawn" : "");
                return null;
            }
            // the withdrawal script takes the entry back only if the relay has not popped it yet
            if (!pending.isEmpty()) {
                long slot = slotOf(pending);
                String why = null;
                if (slot > nowMs && paused) {
                    why = "the schedule is paused";
                } else if (slot > nowMs && !fingerprint.equals(state.get("fp"))) {
                    why = "the schedule's definition changed";
                } else if (slot < nowMs - SlotPlanner.GRACE_MS && nowMs - claimed.tickMs() > SlotPlanner.GRACE_MS) {
                    // this tend comes late too: no relay ran (a tend on time leaves a late delivery to the relay)
                    why = "no relay handed it over in time (the catch-up policy decides it)";
                }
                if (why != null) {
                    ScheduleStore.Withdrawal w = store.withdraw(keys, def.name(), cursor, nowMs);
                    if (!w.applied()) {
                        return null;
                    }
                    if (w.withdrawn()) {
                        log.info("schedule {}: withdrew slot entry {} before delivery: {}", def.name(), pending, why);
                        cursor = w.cursor();
                    }
                }
            }
            Long from = cursor.isEmpty() ? null : Long.parseLong(cursor);
            if (from != null && state.containsKey("fp") && !fingerprint.equals(state.get("fp"))) {
                // a new definition takes effect from its next slot: its slots before now never existed
                from = Math.max(from, nowMs);
            }
            SlotPlan plan = SlotPlanner.plan(def, from, "1".equals(state.get("held")), paused, nowMs);
            // only what changed: each field is one more command in the write script
            Map<String, String> fields = new LinkedHashMap<>();
            putChanged(fields, state, "fp", fingerprint);
            putChanged(fields, state, "held", plan.held() ? "1" : "");
            if (!def.runtime()) {
                putChanged(fields, state, "origin", "config");
            }
            if (cursor.isEmpty()) {
                fields.put("created-at", Long.toString(nowMs));
            }
            if (!plan.slots().isEmpty()) {
                // the last two slots written, for the views' "last fire" (a withdrawal moves last back)
                int n = plan.slots().size();
                fields.put("last", Long.toString(plan.slots().get(n - 1)));
                fields.put(
                        "before-last", n > 1 ? Long.toString(plan.slots().get(n - 2)) : state.getOrDefault("last", ""));
            }
            if (!plan.slots().isEmpty()) {
                // set, not added: the write is conditional on the cursor this count was read with
                long before = Long.parseLong(state.getOrDefault("written", "0"));
                fields.put("written", Long.toString(before + plan.slots().size()));
            }
            Map<String, Long> counters = new LinkedHashMap<>();
            plan.skipped().forEach((reason, s) -> counters.put(ScheduleStore.SKIPPED + reason, s.count()));
            List<ScheduleStore.Entry> entries = new ArrayList<>(plan.slots().size());
            for (long slot : plan.slots()) {
                entries.add(new ScheduleStore.Entry(slot, SlotPlan.idOf(def.name(), slot), payload(def, slot)));
            }
            return new Prepared(
                    def,
                    plan,
                    new ScheduleStore.Tend(def.name(), cursor, def.runtime(), plan, fields, counters, entries));
        } finally {
            MDC.remove("business");
        }
    }

    /** Counts and logs a tend after its batch was written ({@code written}: its cursor check passed). */
    void finish(Prepared prepared, boolean written) {
        ScheduleDefinition def = prepared.def();
        SlotPlan plan = prepared.plan();
        if (!written) {
            log.debug("schedule {}: tended meanwhile by another instance", def.name());
            return;
        }
        MDC.put("business", def.business());
        try {
            if (!plan.slots().isEmpty()) {
                metrics.written(def.name(), plan.slots().size());
            }
            plan.skipped().forEach((reason, s) -> {
                metrics.skipped(def.name(), reason, s.count());
                String text = "schedule {}: skipped {} slot(s), reason {}: {}{}";
                Object[] args = {
                    def.name(),
                    s.count(),
                    reason,
                    String.join(", ", s.samples()),
                    s.count() > s.samples().size() ? ", ..." : ""
                };
                if (reason.equals(SlotPlanner.CATCH_UP) || reason.equals(SlotPlanner.CATCH_UP_LIMIT)) {
                    log.warn(text, args);
                } else {
                    log.info(text, args);
                }
            });
        } finally {
            MDC.remove("business");
        }
    }

    private static void putChanged(Map<String, String> fields, Map<String, String> state, String field, String value) {
        if (!value.equals(state.getOrDefault(field, ""))) {
            fields.put(field, value);
        }
    }

    /** The stamped payload of a slot entry: the schedule's message and headers, its name and slot. */
    static byte[] payload(ScheduleDefinition def, long slotMs) {
        byte[] message = def.payloadBytes();
        byte[] inner = def.headers().isEmpty() ? message : MessageOptions.envelope(def.headers(), message);
        return ScheduleStamp.stamp(def.name(), slotMs, inner);
    }

    /** The slot of an entry id {@code <name>@<slot ms>}. */
    static long slotOf(String id) {
        return Long.parseLong(id.substring(id.lastIndexOf('@') + 1));
    }
}
