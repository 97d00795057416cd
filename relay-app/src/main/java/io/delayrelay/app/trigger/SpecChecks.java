package io.delayrelay.app.trigger;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.app.trigger.BusinessSpec.Range;

import static io.delayrelay.app.trigger.BusinessSpec.EXCHANGE_TYPES;
import static io.delayrelay.app.trigger.BusinessSpec.MAX_BATCH_BYTES;
import static io.delayrelay.app.trigger.BusinessSpec.MAX_LEAD;
import static io.delayrelay.app.trigger.BusinessSpec.MAX_LINGER;
import static io.delayrelay.app.trigger.BusinessSpec.MIN_BATCH_BYTES;
import static io.delayrelay.app.trigger.BusinessSpec.MIN_COLD_AFTER;

/**
 * The range checks of {@link BusinessSpec#validate()}: each setting against its own valid values. One problem per bad
 * setting, in the order of the configuration reference, each naming business, property and value.
 */
final class SpecChecks {

    static final Map<String, Range> INTEGER_RANGES = ranges(
            "shards", new Range(1, 16384),
            "threads", new Range(1, 256),
            "batch-size", new Range(1, 2000),
            "max-attempts", new Range(1, 1000),
            "dead-max-size", new Range(1, Integer.MAX_VALUE),
            "max-rate", new Range(1, 10_000_000));

    private final String business;
    private final List<ConfigProblem> problems = new ArrayList<>();

    private SpecChecks(String business) {
        this.business = business;
    }

    static List<ConfigProblem> problems(BusinessSpec spec) {
        SpecChecks c = new SpecChecks(spec.name());
        c.range("shards", spec.shards());
        c.range("threads", spec.threads());
        c.range("batch-size", spec.batch().size());
        long bytes = spec.batch().bytes();
        if (bytes < MIN_BATCH_BYTES || bytes > MAX_BATCH_BYTES) {
            c.add("batch-bytes", bytes + "B", "must be between " + MIN_BATCH_BYTES + "B and " + MAX_BATCH_BYTES + "B");
        }
        c.range("max-attempts", spec.retry().maxAttempts());
        c.range("dead-max-size", spec.deadSet().maxSize());
        c.positive("dead-max-age", spec.deadSet().maxAge());
        c.required("exchange", spec.route().exchange());
        c.required("routing-key", spec.route().routingKey());
        if (spec.route().type() == null || !EXCHANGE_TYPES.contains(spec.route().type())) {
            c.add("exchange-type", spec.route().type(), "must be one of " + EXCHANGE_TYPES);
        }
        BusinessSpec.Timing timing = spec.timing();
        c.positive("max-idle", timing.maxIdle());
        c.positive("lease", timing.lease());
        c.positive("retry-delay", spec.retry().delay());
        c.positive("retry-delay-max", spec.retry().delayMax());
        c.positive("publish-timeout", timing.publishTimeout());
        Duration lateness = spec.late().maxLateness();
        if (lateness != null && (lateness.isNegative() || lateness.isZero())) {
            c.add("max-lateness", lateness, "must be a positive duration (leave it unset to deliver however late)");
        }
        if (spec.maxRate() != BusinessSpec.NO_MAX_RATE) {
            c.range("max-rate", spec.maxRate());
        }
        if (spec.coldAfter() != null && spec.coldAfter().compareTo(MIN_COLD_AFTER) < 0) {
            c.add(
                    "cold-after",
                    spec.coldAfter(),
                    "must be at least " + MIN_COLD_AFTER + " (or 0 / unset: no cold tier)");
        }
        Duration linger = timing.linger();
        if (linger == null || linger.isNegative() || linger.compareTo(MAX_LINGER) > 0) {
            c.add(
                    "linger",
                    linger,
                    "must be between 0 and " + MAX_LINGER + " (0: pop each shard as soon as it is due)");
        }
        Duration lead = timing.lead();
        if (lead == null || lead.isNegative() || lead.compareTo(MAX_LEAD) > 0) {
            c.add("lead", lead, "must be between 0 and " + MAX_LEAD + " (0: off, each entry popped once it is due)");
        }
        BusinessSpec.Slo slo = spec.slo();
        c.positive("slo.on-time", slo == null ? null : slo.onTime());
        double target = slo == null ? Double.NaN : slo.target();
        if (!(target > 0 && target < 1)) {
            c.add("slo.target", target, "must be a ratio between 0 and 1 (exclusive), e.g. 0.999");
        }
        return List.copyOf(c.problems);
    }

    private void add(String property, Object value, String reason) {
        problems.add(ConfigProblem.property(business, property, value, reason));
    }

    private void range(String property, int value) {
        Range range = INTEGER_RANGES.get(property);
        if (value < range.min() || value > range.max()) {
            add(property, value, "must be between " + range.min() + " and " + range.max());
        }
    }

    private void required(String property, String value) {
        if (value == null || value.isBlank()) {
            problems.add(ConfigProblem.blank(business, property, value, "required, must not be blank"));
        }
    }

    private void positive(String property, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            add(property, value, "must be a positive duration");
        }
    }

    private static Map<String, Range> ranges(Object... pairs) {
        Map<String, Range> ranges = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            ranges.put((String) pairs[i], (Range) pairs[i + 1]);
        }
        return Collections.unmodifiableMap(ranges);
    }
}
