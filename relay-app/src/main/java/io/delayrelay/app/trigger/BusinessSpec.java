package io.delayrelay.app.trigger;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;

/**
 * The configuration of one business: immutable, its settings grouped as the configuration reference groups them.
 * What changes while the relay runs (shards scanned, an operator's pause, quarantined shards) is the engine's
 * {@code BusinessState}. Configuration builds it with the canonical constructor and {@link #validate()}; other
 * callers use {@link #builder(String, DelayQueueKeys)} or {@link #toBuilder()}, which validate in {@code build()}.
 *
 * @param name             business name
 * @param keys             its Redis keys
 * @param shards           shard count M producers hash into
 * @param threads          worker threads
 * @param threadNamePrefix worker thread name prefix
 * @param route            where its messages are published
 * @param batch            how much one pop takes
 * @param timing           how often workers look, how long they wait, how long an entry may stay unconfirmed
 * @param retry            when a failed delivery is tried again
 * @param deadSet          how many dead letters are kept, for how long
 * @param late             what happens to an entry popped too late
 * @param maxRate          most messages per second the fleet publishes for the business; {@link #NO_MAX_RATE}: no cap
 * @param slo              the on-time objective
 * @param coldAfter        entries due further ahead than this are moved to the cold tier, or null: no cold tier
 * @param messageShape     what the relay puts on the messages besides the body (full or lean)
 * @param outgoing         how entries become AMQP messages
 * @param paused           whether configuration pauses the workers (an operator may pause them too)
 */
public record BusinessSpec(
        String name,
        DelayQueueKeys keys,
        int shards,
        int threads,
        String threadNamePrefix,
        Route route,
        Batch batch,
        Timing timing,
        Retry retry,
        DeadSet deadSet,
        LatePolicy late,
        int maxRate,
        Slo slo,
        Duration coldAfter,
        MessageShape messageShape,
        OutgoingMessages outgoing,
        boolean paused) {

    public static final int DEFAULT_SHARDS = 16;
    public static final int DEFAULT_THREADS = 2;
    public static final String DEFAULT_EXCHANGE_TYPE = "direct";
    public static final int DEFAULT_BATCH_SIZE = 1000;
    public static final long DEFAULT_BATCH_BYTES = 16L * 1024 * 1024;
    public static final Duration DEFAULT_MAX_IDLE = Duration.ofMillis(100);
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final int DEFAULT_MAX_ATTEMPTS = 10;
    public static final Duration DEFAULT_RETRY_DELAY = Duration.ofSeconds(1);
    public static final Duration DEFAULT_RETRY_DELAY_MAX = Duration.ofMinutes(5);
    public static final Duration DEFAULT_PUBLISH_TIMEOUT = Duration.ofSeconds(10);
    public static final int DEFAULT_DEAD_MAX_SIZE = 10_000;
    public static final Duration DEFAULT_DEAD_MAX_AGE = Duration.ofDays(180);

    /** {@link #maxRate()} of a business without a cap. */
    public static final int NO_MAX_RATE = 0;

    /** The on-time objective's defaults. */
    public static final Duration DEFAULT_SLO_ON_TIME = Duration.ofSeconds(1);

    public static final double DEFAULT_SLO_TARGET = 0.999;

    /** The linger of specs built without one (and relay.defaults.linger's default). */
    public static final Duration DEFAULT_LINGER = Duration.ofMillis(8);

    /** The lead of specs built without one (and relay.defaults.lead's default): pop-ahead off. */
    public static final Duration DEFAULT_LEAD = Duration.ZERO;

    /** Shortest {@link #coldAfter()}: the cold tier's promotion lead is half of it, its period up to a second. */
    public static final Duration MIN_COLD_AFTER = Duration.ofSeconds(10);

    /** The longest lead allowed (pop-ahead): entries within it of their due time can no longer be cancelled. */
    public static final Duration MAX_LEAD = Duration.ofSeconds(1);

    /** The longest linger allowed: it adds to every message's lag. */
    public static final Duration MAX_LINGER = Duration.ofSeconds(1);

    /** The exchange types the relay can declare. */
    public static final List<String> EXCHANGE_TYPES = List.of("direct", "topic", "fanout", "headers");

    public static final long MIN_BATCH_BYTES = 1024;
    public static final long MAX_BATCH_BYTES = 512L * 1024 * 1024;

    /** An inclusive range of valid values of an integer setting. */
    public record Range(int min, int max) {}

    /**
     * The valid range of each integer setting, by property name (as under {@code relay.defaults}): the one place
     * validation and the Helm chart's values.schema.json take them from.
     */
    public static final Map<String, Range> INTEGER_RANGES = SpecChecks.INTEGER_RANGES;

    /**
     * Where the messages go: {@code exchange}, {@code routing-key}, {@code exchange-type} and
     * {@code declare-exchange}.
     */
    public record Route(String exchange, String routingKey, String type, boolean declare) {}

    /** {@code batch-size} and {@code batch-bytes}: most entries and bytes (members plus payloads) per pop. */
    public record Batch(int size, long bytes) {}

    /**
     * {@code max-idle}, {@code linger}, {@code lead}, {@code lease} and {@code publish-timeout}: the longest sleep of
     * an idle worker; the wait for more shards to fall due; pop-ahead (0: off); how long a popped entry may stay
     * unconfirmed; the longest wait for a batch's confirms.
     */
    public record Timing(Duration maxIdle, Duration linger, Duration lead, Duration lease, Duration publishTimeout) {}

    /** {@code max-attempts}, {@code retry-delay} (doubles per attempt) and {@code retry-delay-max}. */
    public record Retry(int maxAttempts, Duration delay, Duration delayMax) {}

    /** {@code dead-max-size} and {@code dead-max-age}: the dead set's bounds. */
    public record DeadSet(int maxSize, Duration maxAge) {}

    /**
     * {@code max-lateness} (null: no limit) and {@code on-late}: whether an entry past it or its own expiry is
     * dropped ({@code drop} true) or dead-lettered.
     */
    public record LatePolicy(Duration maxLateness, boolean drop) {}

    /** {@code slo.on-time} and {@code slo.target}: on time within {@code onTime}, a share {@code target} of them. */
    public record Slo(Duration onTime, double target) {}

    /**
     * Every setting out of its range, each naming the business, the property and the value; empty when the spec is
     * valid. Rules between settings (the lease rule) are the configuration's to check.
     */
    public List<ConfigProblem> validate() {
        return SpecChecks.problems(this);
    }

    /** Whether pops take entries ahead of their due time (the lead above 0). */
    public boolean popsAhead() {
        return timing.lead() != null && timing.lead().toMillis() > 0;
    }

    /**
     * How long a round of pops lasts at most, beyond the earliest due time: the lead when popping ahead, else the
     * linger. Acks wait for a pop about this long; a shard known due within it is popped by then.
     */
    public Duration round() {
        return popsAhead() ? timing.lead() : timing.linger();
    }

    /** Whether the business has a fleet-wide rate cap. */
    public boolean rateCapped() {
        return maxRate > 0;
    }

    /** Whether the business has a cold tier. */
    public boolean cold() {
        return coldAfter != null;
    }

    /**
     * A builder of a business with every setting at its default; the exchange and routing key default to the
     * business name and the thread name prefix to {@code relay-<name>-}.
     */
    public static BusinessSpecBuilder builder(String name, DelayQueueKeys keys) {
        return new BusinessSpecBuilder(name, keys);
    }

    /** A builder holding these settings. */
    public BusinessSpecBuilder toBuilder() {
        return new BusinessSpecBuilder(this);
    }
}
