package io.delayrelay.app.metrics;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import io.delayrelay.app.engine.DeadReason;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.trigger.BusinessSpec;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import static io.delayrelay.app.metrics.RelayMeterNames.TAG_BUSINESS;

/**
 * The fixed meters of one business and the values its gauges read. Every meter is declared here with its
 * description and tags, registered up front: a series that first appears at 1 is invisible to {@code increase()}.
 * {@link MicrometerRelayEvents} binds the engine's events to these meters.
 */
final class BusinessMeters {
    /** Lag histogram buckets: milliseconds to minutes. */
    static final Duration[] LAG_BUCKETS = {
        Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
        Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
        Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30),
        Duration.ofMinutes(1), Duration.ofMinutes(2), Duration.ofMinutes(5), Duration.ofMinutes(10)
    };

    /** The lag buckets plus one at {@code onTime} (the business's slo.on-time), in order. */
    static Duration[] withBucket(Duration onTime) {
        return Stream.concat(Arrays.stream(LAG_BUCKETS), Stream.of(onTime))
                .distinct()
                .sorted()
                .toArray(Duration[]::new);
    }

    final String business;
    final Counter relayed;
    /** The lag histogram, with a bucket at {@link #onTimeMs}; replaced when slo.on-time changes. */
    volatile Timer lag;
    /** The business's slo.on-time in ms; -1 until {@link #follow} ran. */
    volatile long onTimeMs = -1;

    final Counter onTime;
    final Counter early;
    final AtomicLong maxRate = new AtomicLong();
    /** Tokens left at the last charge; NaN without a cap. */
    final AtomicLong rateAllowance = new AtomicLong();

    volatile double sloTarget = Double.NaN;
    final Counter redeliveries;
    final Counter errors;
    final Counter workerRestarts;
    final AtomicLong due = new AtomicLong();
    final AtomicLong scheduled = new AtomicLong();
    final AtomicLong inflight = new AtomicLong();
    final AtomicLong dead = new AtomicLong();
    /** The business's cold count over all its shards, sampled with the backlog (not {@link #cold}: this instance's). */
    final AtomicLong coldSampled = new AtomicLong();

    final AtomicLong oldestOverdueMs = new AtomicLong();
    final AtomicLong shards = new AtomicLong();
    final AtomicLong threads = new AtomicLong();
    final AtomicLong shardsOwned = new AtomicLong();
    final AtomicLong shardsPolled = new AtomicLong();
    final AtomicLong seats = new AtomicLong();
    final AtomicLong seatHeld = new AtomicLong(1);
    final AtomicLong cold = new AtomicLong();
    final AtomicLong paused = new AtomicLong();
    /** Monotonic time of the last successful sample's reading; 0: none yet. */
    final AtomicLong sampledAtNanos = new AtomicLong();
    /** Whether the last sample failed: the sampled gauges read NaN. */
    volatile boolean stale;

    final AtomicLong keyspaceMode = new AtomicLong(); // 1: keyspace notifications wake it; 0: it polls

    BusinessMeters(MeterRegistry registry, String business) {
        this.business = business;
        relayed = Counter.builder(RelayMeterNames.RELAYED)
                .description("Messages confirmed by the broker")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        lag = lagTimer(registry, business, BusinessSpec.DEFAULT_SLO_ON_TIME);
        onTime = Counter.builder(RelayMeterNames.ON_TIME)
                .description("Confirmed messages whose lag was at most the business's slo.on-time")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        early = Counter.builder(RelayMeterNames.EARLY)
                .description("Messages published before their due time by Redis time (must stay 0)")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        Gauge.builder(RelayMeterNames.SLO_ON_TIME, this, m -> m.onTimeMs < 0 ? Double.NaN : m.onTimeMs / 1000.0)
                .description("The business's slo.on-time: how late a message may be and still be on time")
                .baseUnit("seconds")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        Gauge.builder(RelayMeterNames.SLO_TARGET, this, m -> m.sloTarget)
                .description("The business's slo.target: the share of messages that must be on time")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        Gauge.builder(RelayMeterNames.MAX_RATE, maxRate, AtomicLong::get)
                .description("The business's fleet-wide max-rate (messages per second), 0 without a cap")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        Gauge.builder(
                        RelayMeterNames.RATE_ALLOWANCE,
                        this,
                        m -> m.maxRate.get() == 0 ? Double.NaN : m.rateAllowance.get())
                .description("Tokens left in the business's rate bucket at this instance's last charge (NaN"
                        + " without a cap)")
                .baseUnit(RelayMeterNames.UNIT_MESSAGES)
                .tag(TAG_BUSINESS, business)
                .register(registry);
        redeliveries = Counter.builder(RelayMeterNames.REDELIVERIES)
                .description("Entries put back for redelivery after their lease expired")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        errors = Counter.builder(RelayMeterNames.ERRORS)
                .description("Failed worker or reaper iterations")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        // counters with bounded tags are registered at 0: with several replicas, a series that appears at 1 on
        // its first event is invisible to increase(), and the first dead letter would never alert
        for (String bound : List.of(RelayMeterNames.BOUND_MAX_SIZE, RelayMeterNames.BOUND_MAX_AGE)) {
            Counter.builder(RelayMeterNames.DEAD_TRIMMED)
                    .description("Dead letters removed by the dead-set bounds")
                    .tag(TAG_BUSINESS, business)
                    .tag(RelayMeterNames.TAG_BOUND, bound)
                    .register(registry);
        }
        for (DeadReason reason : DeadReason.values()) {
            Counter.builder(RelayMeterNames.DEAD_LETTERED)
                    .tag(TAG_BUSINESS, business)
                    .tag(RelayMeterNames.TAG_REASON, reason.tag())
                    .register(registry);
        }
        Counter.builder(RelayMeterNames.DROPPED)
                .description("Late entries removed unpublished (on-late: drop)")
                .tag(TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_REASON, DeadReason.EXPIRED.tag())
                .register(registry);
        for (PublishOutcome.Cause cause : PublishOutcome.Cause.values()) {
            // an unroutable message is dead-lettered at once (dead_lettered_total{reason="unroutable"}), never
            // counted as a publish failure: a series for it would stay 0 forever
            if (cause != PublishOutcome.Cause.NONE && cause != PublishOutcome.Cause.UNROUTABLE) {
                Counter.builder(RelayMeterNames.PUBLISH_FAILURES)
                        .tag(TAG_BUSINESS, business)
                        .tag(RelayMeterNames.TAG_CAUSE, cause.tag())
                        .register(registry);
            }
        }
        Counter.builder(RelayMeterNames.CONFIG_REJECTED)
                .description("Reloaded settings rejected")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        workerRestarts = Counter.builder(RelayMeterNames.WORKER_RESTARTS)
                .description("Worker threads that had died and were started again")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        backlog(registry, business, RelayMeterNames.STATE_DUE, due);
        backlog(registry, business, RelayMeterNames.STATE_SCHEDULED, scheduled);
        backlog(registry, business, RelayMeterNames.STATE_INFLIGHT, inflight);
        backlog(registry, business, RelayMeterNames.STATE_DEAD, dead);
        backlog(registry, business, RelayMeterNames.STATE_COLD, coldSampled);
        Gauge.builder(RelayMeterNames.BACKLOG_SAMPLE_AGE, this, BusinessMeters::sampleAgeSeconds)
                .description("Seconds since the backlog gauges were last sampled successfully (NaN before the"
                        + " first sample)")
                .baseUnit("seconds")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        Gauge.builder(RelayMeterNames.OLDEST_OVERDUE, this, m -> m.sampled(m.oldestOverdueMs) / 1000.0)
                .description("How long the oldest due entry has been waiting")
                .baseUnit("seconds")
                .tag(TAG_BUSINESS, business)
                .register(registry);
        gauge(registry, business, RelayMeterNames.SHARDS, shards, "Shard count producers hash into");
        gauge(
                registry,
                business,
                RelayMeterNames.SHARDS_OWNED,
                shardsOwned,
                "Shards this instance pops in the fleet's division");
        gauge(
                registry,
                business,
                RelayMeterNames.SHARDS_POLLED,
                shardsPolled,
                "Shards of this instance's share polled instead of heard because they are busy");
        gauge(
                registry,
                business,
                RelayMeterNames.SEATS,
                seats,
                "Live seats (relay instances) in the business's division of the shards");
        gauge(
                registry,
                business,
                RelayMeterNames.SEAT_HELD,
                seatHeld,
                "1 while this instance holds a seat in the division, 0 while it gave it up (cannot relay)");
        gauge(registry, business, RelayMeterNames.THREADS, threads, "Worker threads");
        gauge(
                registry,
                business,
                RelayMeterNames.COLD_ENTRIES,
                cold,
                "Live cold entries of the shards this instance moves (cold tier)");
        gauge(
                registry,
                business,
                RelayMeterNames.PAUSED,
                paused,
                "1 while the business is paused (by configuration or an operator), else 0");
        for (boolean keyspace : new boolean[] {true, false}) {
            Gauge.builder(RelayMeterNames.WAKE_MODE, keyspaceMode, v -> keyspace ? v.get() : 1 - v.get())
                    .description("1 for the wake mode in force (keyspace notifications or polling), else 0")
                    .tag(TAG_BUSINESS, business)
                    .tag(
                            RelayMeterNames.TAG_MODE,
                            keyspace ? RelayMeterNames.MODE_KEYSPACE : RelayMeterNames.MODE_POLLING)
                    .register(registry);
        }
    }

    /** Follows the spec's cap and objective; a changed slo.on-time gets the lag histogram a bucket there. */
    synchronized void follow(MeterRegistry registry, BusinessSpec spec) {
        maxRate.set(spec.maxRate());
        sloTarget = spec.slo().target();
        long ms = spec.slo().onTime().toMillis();
        if (ms != onTimeMs) {
            if (onTimeMs >= 0) {
                // the buckets of a registered timer are fixed: a new one starts from 0 (a counter reset, which
                // rate() and increase() take in their stride)
                registry.remove(lag);
                lag = lagTimer(registry, business, spec.slo().onTime());
            } else if (!spec.slo().onTime().equals(BusinessSpec.DEFAULT_SLO_ON_TIME)) {
                registry.remove(lag);
                lag = lagTimer(registry, business, spec.slo().onTime());
            }
            onTimeMs = ms;
        }
    }

    private static Timer lagTimer(MeterRegistry registry, String business, Duration onTime) {
        return Timer.builder(RelayMeterNames.LAG)
                .description("Broker confirm time minus due time")
                .tag(TAG_BUSINESS, business)
                .serviceLevelObjectives(withBucket(onTime))
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
    }

    private static void gauge(
            MeterRegistry registry, String business, String name, AtomicLong value, String description) {
        Gauge.builder(name, value, AtomicLong::get)
                .description(description)
                .tag(TAG_BUSINESS, business)
                .register(registry);
    }

    private double sampleAgeSeconds() {
        long at = sampledAtNanos.get();
        return at == 0 ? Double.NaN : (System.nanoTime() - at) / 1e9;
    }

    /** A sampled value, or NaN while the last sample failed. */
    private double sampled(AtomicLong value) {
        return stale ? Double.NaN : value.get();
    }

    private void backlog(MeterRegistry registry, String business, String state, AtomicLong value) {
        Gauge.builder(RelayMeterNames.BACKLOG, this, m -> m.sampled(value))
                .description("Entries by state, sampled")
                .baseUnit(RelayMeterNames.UNIT_MESSAGES)
                .tag(TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_STATE, state)
                .register(registry);
    }
}
