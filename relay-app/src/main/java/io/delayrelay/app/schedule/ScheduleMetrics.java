package io.delayrelay.app.schedule;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/** The recurring schedules' meters; each is counted by the one instance whose tend wrote it. */
public final class ScheduleMetrics {

    /** Slots skipped, tags schedule and reason (catch-up, catch-up-limit, paused, dst-gap). */
    public static final String SKIPPED = "delay.relay.schedule.slots.skipped";
    /** Slot entries written (each fires once), tag schedule. */
    public static final String WRITTEN = "delay.relay.schedule.slots.written";
    /** Extra messages of "trigger now", tag schedule. */
    public static final String TRIGGERED = "delay.relay.schedule.triggered";

    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();

    public ScheduleMetrics(MeterRegistry registry) {
        // without a registry (a library use without Micrometer's auto-configuration) the counts stay local
        this.registry = registry == null ? new SimpleMeterRegistry() : registry;
    }

    void skipped(String schedule, String reason, long count) {
        counter(SKIPPED, schedule, reason).increment(count);
    }

    void written(String schedule, long count) {
        counter(WRITTEN, schedule, null).increment(count);
    }

    void triggered(String schedule) {
        counter(TRIGGERED, schedule, null).increment();
    }

    private Counter counter(String name, String schedule, String reason) {
        return counters.computeIfAbsent(name + '\0' + schedule + '\0' + reason, k -> {
            Counter.Builder builder = Counter.builder(name).tag("schedule", schedule);
            if (reason != null) {
                builder.tag("reason", reason);
            }
            return builder.register(registry);
        });
    }
}
