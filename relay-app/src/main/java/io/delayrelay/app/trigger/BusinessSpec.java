package io.delayrelay.app.trigger;

import java.time.Duration;

import io.delayrelay.api.DelayQueueKeys;

/**
 * The configuration of one business: immutable, validated when built from configuration. What changes while the
 * relay runs (how many shards are scanned, an operator's pause, quarantined shards) is runtime state, kept apart
 * in the engine's {@code BusinessState}.
 * <p>
 * Longer than 300 lines because a record of 28 settings needs its canonical constructor, the shorter ones older
 * callers use, and one {@code with...} per setting changed at runtime, each listing every component.
 *
 * @param name             business name
 * @param keys             its Redis keys
 * @param shards           shard count M producers hash into
 * @param threads          worker threads
 * @param threadNamePrefix worker thread name prefix
 * @param exchange         target exchange
 * @param routingKey       routing key
 * @param exchangeType     exchange type used when the relay declares the exchange
 * @param declareExchange  whether the relay declares the exchange at start
 * @param batchSize        most entries popped per Lua call
 * @param batchBytes       most bytes (members plus payloads) popped per Lua call; one entry is always taken
 * @param maxIdle          longest sleep of an idle worker (bounds the pick-up delay of a producer without wake)
 * @param lease            how long a popped entry may stay unconfirmed before it is redelivered
 * @param maxAttempts      failed delivery attempts after which an entry is dead-lettered
 * @param retryDelay       delay before the first retry of a failed delivery; doubles per attempt
 * @param retryDelayMax    cap of the retry delay
 * @param publishTimeout   longest wait for the broker's confirms of a batch
 * @param deadMaxSize      most dead letters kept (the oldest beyond are trimmed)
 * @param deadMaxAge       longest a dead letter is kept
 * @param paused           whether configuration pauses the workers (an operator may pause them too)
 * @param outgoing         how entries become AMQP messages
 * @param maxLateness      how late after its (original) due time an entry may still be published, or null: no limit
 * @param dropLate         whether an entry past max-lateness or its own expiry is dropped (else dead-lettered)
 * @param maxRate          most messages per second the fleet publishes for the business; {@link #NO_MAX_RATE}: no cap
 * @param sloOnTime        a message confirmed within this long after its due time is on time
 * @param sloTarget        share of messages that must be on time (the burn-rate alerts' objective)
 * @param messageShape     what the relay puts on the messages besides the body (full or lean)
 * @param linger           how long after the earliest due time a worker waits for more shards to fall due, so that
 *                         one pop carries them all (0: pop as soon as a shard is due)
 */
public record BusinessSpec(
        String name,
        DelayQueueKeys keys,
        int shards,
        int threads,
        String threadNamePrefix,
        String exchange,
        String routingKey,
        String exchangeType,
        boolean declareExchange,
        int batchSize,
        long batchBytes,
        Duration maxIdle,
        Duration lease,
        int maxAttempts,
        Duration retryDelay,
        Duration retryDelayMax,
        Duration publishTimeout,
        int deadMaxSize,
        Duration deadMaxAge,
        boolean paused,
        OutgoingMessages outgoing,
        Duration maxLateness,
        boolean dropLate,
        int maxRate,
        Duration sloOnTime,
        double sloTarget,
        MessageShape messageShape,
        Duration linger) {

    /** {@link #maxRate()} of a business without a cap. */
    public static final int NO_MAX_RATE = 0;

    /** The objective's defaults, for specs built without one. */
    public static final Duration DEFAULT_SLO_ON_TIME = Duration.ofSeconds(1);

    public static final double DEFAULT_SLO_TARGET = 0.999;

    /** The linger of specs built without one (and relay.defaults.linger's default). */
    public static final Duration DEFAULT_LINGER = Duration.ofMillis(8);

    /** A business with the full message shape and the default linger. */
    public BusinessSpec(
            String name,
            DelayQueueKeys keys,
            int shards,
            int threads,
            String threadNamePrefix,
            String exchange,
            String routingKey,
            String exchangeType,
            boolean declareExchange,
            int batchSize,
            long batchBytes,
            Duration maxIdle,
            Duration lease,
            int maxAttempts,
            Duration retryDelay,
            Duration retryDelayMax,
            Duration publishTimeout,
            int deadMaxSize,
            Duration deadMaxAge,
            boolean paused,
            OutgoingMessages outgoing,
            Duration maxLateness,
            boolean dropLate,
            int maxRate,
            Duration sloOnTime,
            double sloTarget) {
        this(
                name,
                keys,
                shards,
                threads,
                threadNamePrefix,
                exchange,
                routingKey,
                exchangeType,
                declareExchange,
                batchSize,
                batchBytes,
                maxIdle,
                lease,
                maxAttempts,
                retryDelay,
                retryDelayMax,
                publishTimeout,
                deadMaxSize,
                deadMaxAge,
                paused,
                outgoing,
                maxLateness,
                dropLate,
                maxRate,
                sloOnTime,
                sloTarget,
                MessageShape.FULL,
                DEFAULT_LINGER);
    }

    /** A business without a late policy, a rate cap or an objective of its own (the defaults). */
    public BusinessSpec(
            String name,
            DelayQueueKeys keys,
            int shards,
            int threads,
            String threadNamePrefix,
            String exchange,
            String routingKey,
            String exchangeType,
            boolean declareExchange,
            int batchSize,
            long batchBytes,
            Duration maxIdle,
            Duration lease,
            int maxAttempts,
            Duration retryDelay,
            Duration retryDelayMax,
            Duration publishTimeout,
            int deadMaxSize,
            Duration deadMaxAge,
            boolean paused,
            OutgoingMessages outgoing) {
        this(
                name,
                keys,
                shards,
                threads,
                threadNamePrefix,
                exchange,
                routingKey,
                exchangeType,
                declareExchange,
                batchSize,
                batchBytes,
                maxIdle,
                lease,
                maxAttempts,
                retryDelay,
                retryDelayMax,
                publishTimeout,
                deadMaxSize,
                deadMaxAge,
                paused,
                outgoing,
                null,
                false);
    }

    /** A business with a late policy, without a rate cap, with the default on-time objective. */
    public BusinessSpec(
            String name,
            DelayQueueKeys keys,
            int shards,
            int threads,
            String threadNamePrefix,
            String exchange,
            String routingKey,
            String exchangeType,
            boolean declareExchange,
            int batchSize,
            long batchBytes,
            Duration maxIdle,
            Duration lease,
            int maxAttempts,
            Duration retryDelay,
            Duration retryDelayMax,
            Duration publishTimeout,
            int deadMaxSize,
            Duration deadMaxAge,
            boolean paused,
            OutgoingMessages outgoing,
            Duration maxLateness,
            boolean dropLate) {
        this(
                name,
                keys,
                shards,
                threads,
                threadNamePrefix,
                exchange,
                routingKey,
                exchangeType,
                declareExchange,
                batchSize,
                batchBytes,
                maxIdle,
                lease,
                maxAttempts,
                retryDelay,
                retryDelayMax,
                publishTimeout,
                deadMaxSize,
                deadMaxAge,
                paused,
                outgoing,
                maxLateness,
                dropLate,
                NO_MAX_RATE,
                DEFAULT_SLO_ON_TIME,
                DEFAULT_SLO_TARGET);
    }

    /** Whether the business has a fleet-wide rate cap. */
    public boolean rateCapped() {
        return maxRate > 0;
    }

    /** The same settings with a late policy. */
    public BusinessSpec withLatePolicy(Duration maxLateness, boolean dropLate) {
        return with(maxLateness, dropLate, maxRate, sloOnTime, sloTarget, messageShape, linger);
    }

    /** This spec with another rate cap ({@link #NO_MAX_RATE}: none). */
    public BusinessSpec withMaxRate(int rate) {
        return with(maxLateness, dropLate, rate, sloOnTime, sloTarget, messageShape, linger);
    }

    /** This spec with another on-time objective. */
    public BusinessSpec withSlo(Duration onTime, double target) {
        return with(maxLateness, dropLate, maxRate, onTime, target, messageShape, linger);
    }

    /** This spec with another message shape. */
    public BusinessSpec withMessageShape(MessageShape shape) {
        return with(maxLateness, dropLate, maxRate, sloOnTime, sloTarget, shape, linger);
    }

    /** This spec with another linger. */
    public BusinessSpec withLinger(Duration value) {
        return with(maxLateness, dropLate, maxRate, sloOnTime, sloTarget, messageShape, value);
    }

    private BusinessSpec with(
            Duration lateness,
            boolean drop,
            int rate,
            Duration onTime,
            double target,
            MessageShape shape,
            Duration lingering) {
        return new BusinessSpec(
                name,
                keys,
                shards,
                threads,
                threadNamePrefix,
                exchange,
                routingKey,
                exchangeType,
                declareExchange,
                batchSize,
                batchBytes,
                maxIdle,
                lease,
                maxAttempts,
                retryDelay,
                retryDelayMax,
                publishTimeout,
                deadMaxSize,
                deadMaxAge,
                paused,
                outgoing,
                lateness,
                drop,
                rate,
                onTime,
                target,
                shape,
                lingering);
    }
}
