package io.delayrelay.app.trigger;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.trigger.BusinessSpec.Batch;
import io.delayrelay.app.trigger.BusinessSpec.DeadSet;
import io.delayrelay.app.trigger.BusinessSpec.LatePolicy;
import io.delayrelay.app.trigger.BusinessSpec.Retry;
import io.delayrelay.app.trigger.BusinessSpec.Route;
import io.delayrelay.app.trigger.BusinessSpec.Slo;
import io.delayrelay.app.trigger.BusinessSpec.Timing;

import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_BATCH_BYTES;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_BATCH_SIZE;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_DEAD_MAX_AGE;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_DEAD_MAX_SIZE;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_EXCHANGE_TYPE;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_LEAD;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_LEASE;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_LINGER;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_MAX_ATTEMPTS;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_MAX_IDLE;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_PUBLISH_TIMEOUT;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_RETRY_DELAY;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_RETRY_DELAY_MAX;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_SHARDS;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_SLO_ON_TIME;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_SLO_TARGET;
import static io.delayrelay.app.trigger.BusinessSpec.DEFAULT_THREADS;
import static io.delayrelay.app.trigger.BusinessSpec.NO_MAX_RATE;

/**
 * Builds a {@link BusinessSpec}, starting from the settings' defaults or from another spec. Setters name the
 * settings as the configuration does; {@link #build()} validates the result as configuration would, naming every
 * value out of range.
 */
public final class BusinessSpecBuilder {
    private final String name;
    private final DelayQueueKeys keys;
    private int shards = DEFAULT_SHARDS;
    private int threads = DEFAULT_THREADS;
    private String threadNamePrefix;
    private Route route;
    private Batch batch = new Batch(DEFAULT_BATCH_SIZE, DEFAULT_BATCH_BYTES);
    private Timing timing =
            new Timing(DEFAULT_MAX_IDLE, DEFAULT_LINGER, DEFAULT_LEAD, DEFAULT_LEASE, DEFAULT_PUBLISH_TIMEOUT);
    private Retry retry = new Retry(DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_DELAY, DEFAULT_RETRY_DELAY_MAX);
    private DeadSet deadSet = new DeadSet(DEFAULT_DEAD_MAX_SIZE, DEFAULT_DEAD_MAX_AGE);
    private LatePolicy late = new LatePolicy(null, false);
    private int maxRate = NO_MAX_RATE;
    private Slo slo = new Slo(DEFAULT_SLO_ON_TIME, DEFAULT_SLO_TARGET);
    private Duration coldAfter;
    private MessageShape messageShape = MessageShape.FULL;
    private OutgoingMessages outgoing = OutgoingMessages.DEFAULT;
    private boolean paused;

    BusinessSpecBuilder(String name, DelayQueueKeys keys) {
        this.name = Objects.requireNonNull(name, "name");
        this.keys = Objects.requireNonNull(keys, "keys");
        this.threadNamePrefix = "relay-" + name + "-";
        this.route = new Route(name, name, DEFAULT_EXCHANGE_TYPE, false);
    }

    BusinessSpecBuilder(BusinessSpec s) {
        this(s.name(), s.keys());
        shards = s.shards();
        threads = s.threads();
        threadNamePrefix = s.threadNamePrefix();
        route = s.route();
        batch = s.batch();
        timing = s.timing();
        retry = s.retry();
        deadSet = s.deadSet();
        late = s.late();
        maxRate = s.maxRate();
        slo = s.slo();
        coldAfter = s.coldAfter();
        messageShape = s.messageShape();
        outgoing = s.outgoing();
        paused = s.paused();
    }

    public BusinessSpecBuilder shards(int value) {
        shards = value;
        return this;
    }

    public BusinessSpecBuilder threads(int value) {
        threads = value;
        return this;
    }

    public BusinessSpecBuilder threadNamePrefix(String value) {
        threadNamePrefix = value;
        return this;
    }

    /** The exchange, and whether the relay declares it (of which type) at start. */
    public BusinessSpecBuilder exchange(String value, String type, boolean declare) {
        route = new Route(value, route.routingKey(), type, declare);
        return this;
    }

    public BusinessSpecBuilder routingKey(String value) {
        route = new Route(route.exchange(), value, route.type(), route.declare());
        return this;
    }

    public BusinessSpecBuilder batchSize(int value) {
        batch = new Batch(value, batch.bytes());
        return this;
    }

    public BusinessSpecBuilder batchBytes(long value) {
        batch = new Batch(batch.size(), value);
        return this;
    }

    public BusinessSpecBuilder maxIdle(Duration value) {
        timing = new Timing(value, timing.linger(), timing.lead(), timing.lease(), timing.publishTimeout());
        return this;
    }

    public BusinessSpecBuilder linger(Duration value) {
        timing = new Timing(timing.maxIdle(), value, timing.lead(), timing.lease(), timing.publishTimeout());
        return this;
    }

    /** Pop-ahead's lead (0: off). */
    public BusinessSpecBuilder lead(Duration value) {
        timing = new Timing(timing.maxIdle(), timing.linger(), value, timing.lease(), timing.publishTimeout());
        return this;
    }

    public BusinessSpecBuilder lease(Duration value) {
        timing = new Timing(timing.maxIdle(), timing.linger(), timing.lead(), value, timing.publishTimeout());
        return this;
    }

    public BusinessSpecBuilder publishTimeout(Duration value) {
        timing = new Timing(timing.maxIdle(), timing.linger(), timing.lead(), timing.lease(), value);
        return this;
    }

    public BusinessSpecBuilder maxAttempts(int value) {
        retry = new Retry(value, retry.delay(), retry.delayMax());
        return this;
    }

    /** The first retry's delay and the cap of its doubling. */
    public BusinessSpecBuilder retryDelay(Duration first, Duration max) {
        retry = new Retry(retry.maxAttempts(), first, max);
        return this;
    }

    /** The dead set's bounds: most letters kept, longest kept. */
    public BusinessSpecBuilder deadBounds(int maxSize, Duration maxAge) {
        deadSet = new DeadSet(maxSize, maxAge);
        return this;
    }

    /** The late policy: the longest lateness (null: no limit) and whether a late entry is dropped. */
    public BusinessSpecBuilder latePolicy(Duration maxLateness, boolean drop) {
        late = new LatePolicy(maxLateness, drop);
        return this;
    }

    public BusinessSpecBuilder maxLateness(Duration value) {
        return latePolicy(value, late.drop());
    }

    public BusinessSpecBuilder dropLate(boolean value) {
        return latePolicy(late.maxLateness(), value);
    }

    /** The fleet-wide rate cap ({@link BusinessSpec#NO_MAX_RATE}: none). */
    public BusinessSpecBuilder maxRate(int value) {
        maxRate = value;
        return this;
    }

    /** The on-time objective: on time within {@code onTime}, a share {@code target} of messages. */
    public BusinessSpecBuilder slo(Duration onTime, double target) {
        slo = new Slo(onTime, target);
        return this;
    }

    /** Entries due further ahead than this go to the cold tier (null: no cold tier). */
    public BusinessSpecBuilder coldAfter(Duration value) {
        coldAfter = value;
        return this;
    }

    public BusinessSpecBuilder messageShape(MessageShape value) {
        messageShape = value;
        return this;
    }

    public BusinessSpecBuilder outgoing(OutgoingMessages value) {
        outgoing = value;
        return this;
    }

    public BusinessSpecBuilder paused(boolean value) {
        paused = value;
        return this;
    }

    /** The spec; throws {@link IllegalArgumentException} naming every value out of range. */
    public BusinessSpec build() {
        BusinessSpec spec = new BusinessSpec(
                name,
                keys,
                shards,
                threads,
                threadNamePrefix,
                route,
                batch,
                timing,
                retry,
                deadSet,
                late,
                maxRate,
                slo,
                coldAfter,
                messageShape,
                outgoing,
                paused);
        List<ConfigProblem> problems = spec.validate();
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(
                    problems.stream().map(ConfigProblem::message).collect(Collectors.joining("; ")));
        }
        return spec;
    }
}
