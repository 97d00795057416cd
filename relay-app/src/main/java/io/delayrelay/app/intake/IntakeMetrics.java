package io.delayrelay.app.intake;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/** The intakes' meters: messages taken in by outcome, errors by reason, whether each consumes, its queue depth. */
public final class IntakeMetrics implements IntakeConsumer.Listener {

    /** {@code delay_relay_intake_messages_total{intake,outcome}}: scheduled or dead. */
    public static final String MESSAGES = "delay.relay.intake.messages";

    /** {@code delay_relay_intake_errors_total{intake,reason}}: failed writes (retried) and refused setups. */
    public static final String ERRORS = "delay.relay.intake.errors";

    /** {@code delay_relay_intake_up{intake}}: 1 while the intake consumes. */
    public static final String UP = "delay.relay.intake.up";

    /** {@code delay_relay_intake_queue_depth{intake}}: messages waiting in the intake queue, -1 unknown. */
    public static final String DEPTH = "delay.relay.intake.queue.depth";

    private final MeterRegistry registry;
    private final Map<String, AtomicLong> up = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> depth = new ConcurrentHashMap<>();

    public IntakeMetrics(MeterRegistry registry) {
        this.registry = registry == null ? new SimpleMeterRegistry() : registry;
    }

    @Override
    public void received(String intake, IntakeConsumer.Outcome outcome, int count) {
        Counter.builder(MESSAGES)
                .description("Messages the AMQP intake took in, by outcome")
                .tag("intake", intake)
                .tag("outcome", outcome.name().toLowerCase(java.util.Locale.ROOT))
                .register(registry)
                .increment(count);
    }

    @Override
    public void failed(String intake, String reason, Throwable error) {
        Counter.builder(ERRORS)
                .description("AMQP intake errors: writes handed back to the broker, setups refused")
                .tag("intake", intake)
                .tag("reason", reason)
                .register(registry)
                .increment();
    }

    void up(String intake, boolean consuming) {
        gauge(up, UP, "1 while the AMQP intake consumes", intake).set(consuming ? 1 : 0);
    }

    void depth(String intake, long messages) {
        gauge(depth, DEPTH, "Messages waiting in the AMQP intake's queue (-1: unknown)", intake)
                .set(messages);
    }

    private AtomicLong gauge(Map<String, AtomicLong> values, String name, String description, String intake) {
        return values.computeIfAbsent(intake, k -> {
            AtomicLong value = new AtomicLong(-1);
            Gauge.builder(name, value, AtomicLong::get)
                    .description(description)
                    .tag("intake", intake)
                    .register(registry);
            return value;
        });
    }
}
