package io.delayrelay.app.trigger;

import java.time.Duration;
import java.util.Objects;

import io.delayrelay.api.DelayQueueKeys;

/**
 * The configuration of one business: immutable, validated when built from configuration. What changes while the
 * relay runs (how many shards are scanned, an operator's pause, quarantined shards) is runtime state, kept apart
 * in the engine's {@code BusinessState}. Built from configuration by the canonical constructor; elsewhere (a
 * setting changed at runtime, tests) through {@link #builder(String, DelayQueueKeys)} or {@link #toBuilder()}, whose
 * defaults are the settings' defaults, defined here once.
 * <p>
 * Longer than 300 lines because its builder names each of the 29 settings again, one setter each: the price of
 * callers that say only what differs from the defaults instead of telescoping constructors.
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
 * @param coldAfter        entries due further ahead than this are moved to the cold tier, or null: no cold tier
 * @param lead             pop-ahead: a pop also takes the entries due within this long of its Redis time, and the
 *                         worker publishes each at its due time (0: off; then the linger applies). Standalone Redis,
 *                         no max-rate: elsewhere ignored
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
        Duration linger,
        Duration coldAfter,
        Duration lead) {

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

    /** Whether pops take entries ahead of their due time ({@link #lead()} above 0). */
    public boolean popsAhead() {
        return lead != null && lead.toMillis() > 0;
    }

    /**
     * How long a round of pops lasts at most, beyond the earliest due time: the lead when popping ahead, else the
     * linger. Acks wait for a pop about this long; a shard known due within it is popped by then.
     */
    public Duration round() {
        return popsAhead() ? lead : linger;
    }

    /** Shortest {@link #coldAfter()}: the cold tier's promotion lead is half of it, its period up to a second. */
    public static final Duration MIN_COLD_AFTER = Duration.ofSeconds(10);

    /** Whether the business has a fleet-wide rate cap. */
    public boolean rateCapped() {
        return maxRate > 0;
    }

    /** Whether the business has a cold tier. */
    public boolean cold() {
        return coldAfter != null;
    }

    /** The same settings with a late policy. */
    public BusinessSpec withLatePolicy(Duration lateness, boolean drop) {
        return toBuilder().maxLateness(lateness).dropLate(drop).build();
    }

    /** This spec with another rate cap ({@link #NO_MAX_RATE}: none). */
    public BusinessSpec withMaxRate(int rate) {
        return toBuilder().maxRate(rate).build();
    }

    /** This spec with another on-time objective. */
    public BusinessSpec withSlo(Duration onTime, double target) {
        return toBuilder().slo(onTime, target).build();
    }

    /** This spec with another message shape. */
    public BusinessSpec withMessageShape(MessageShape shape) {
        return toBuilder().messageShape(shape).build();
    }

    /** This spec with another lead (pop-ahead; 0: off). */
    public BusinessSpec withLead(Duration value) {
        return toBuilder().lead(value).build();
    }

    /** This spec with another linger. */
    public BusinessSpec withLinger(Duration value) {
        return toBuilder().linger(value).build();
    }

    /** This spec with another cold-after (null: no cold tier). */
    public BusinessSpec withColdAfter(Duration after) {
        return toBuilder().coldAfter(after).build();
    }

    /**
     * A builder of a business with every setting at its default; the exchange and routing key default to the
     * business name and the thread name prefix to {@code relay-<name>-}.
     */
    public static Builder builder(String name, DelayQueueKeys keys) {
        return new Builder(name, keys);
    }

    /** A builder holding these settings. */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** Builds a {@link BusinessSpec}; each setter sets the record component of the same name. */
    public static final class Builder {
        private final String name;
        private final DelayQueueKeys keys;
        private int shards = DEFAULT_SHARDS;
        private int threads = DEFAULT_THREADS;
        private String threadNamePrefix;
        private String exchange;
        private String routingKey;
        private String exchangeType = DEFAULT_EXCHANGE_TYPE;
        private boolean declareExchange;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private long batchBytes = DEFAULT_BATCH_BYTES;
        private Duration maxIdle = DEFAULT_MAX_IDLE;
        private Duration lease = DEFAULT_LEASE;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Duration retryDelay = DEFAULT_RETRY_DELAY;
        private Duration retryDelayMax = DEFAULT_RETRY_DELAY_MAX;
        private Duration publishTimeout = DEFAULT_PUBLISH_TIMEOUT;
        private int deadMaxSize = DEFAULT_DEAD_MAX_SIZE;
        private Duration deadMaxAge = DEFAULT_DEAD_MAX_AGE;
        private boolean paused;
        private OutgoingMessages outgoing = OutgoingMessages.DEFAULT;
        private Duration maxLateness;
        private boolean dropLate;
        private int maxRate = NO_MAX_RATE;
        private Duration sloOnTime = DEFAULT_SLO_ON_TIME;
        private double sloTarget = DEFAULT_SLO_TARGET;
        private MessageShape messageShape = MessageShape.FULL;
        private Duration linger = DEFAULT_LINGER;
        private Duration coldAfter;
        private Duration lead = DEFAULT_LEAD;

        private Builder(String name, DelayQueueKeys keys) {
            this.name = Objects.requireNonNull(name, "name");
            this.keys = Objects.requireNonNull(keys, "keys");
            this.threadNamePrefix = "relay-" + name + "-";
            this.exchange = name;
            this.routingKey = name;
        }

        private Builder(BusinessSpec s) {
            this(s.name, s.keys);
            shards = s.shards;
            threads = s.threads;
            threadNamePrefix = s.threadNamePrefix;
            exchange = s.exchange;
            routingKey = s.routingKey;
            exchangeType = s.exchangeType;
            declareExchange = s.declareExchange;
            batchSize = s.batchSize;
            batchBytes = s.batchBytes;
            maxIdle = s.maxIdle;
            lease = s.lease;
            maxAttempts = s.maxAttempts;
            retryDelay = s.retryDelay;
            retryDelayMax = s.retryDelayMax;
            publishTimeout = s.publishTimeout;
            deadMaxSize = s.deadMaxSize;
            deadMaxAge = s.deadMaxAge;
            paused = s.paused;
            outgoing = s.outgoing;
            maxLateness = s.maxLateness;
            dropLate = s.dropLate;
            maxRate = s.maxRate;
            sloOnTime = s.sloOnTime;
            sloTarget = s.sloTarget;
            messageShape = s.messageShape;
            linger = s.linger;
            coldAfter = s.coldAfter;
            lead = s.lead;
        }

        public Builder shards(int value) {
            shards = value;
            return this;
        }

        public Builder threads(int value) {
            threads = value;
            return this;
        }

        public Builder threadNamePrefix(String value) {
            threadNamePrefix = value;
            return this;
        }

        /** The exchange, and whether the relay declares it (of which type) at start. */
        public Builder exchange(String value, String type, boolean declare) {
            exchange = value;
            exchangeType = type;
            declareExchange = declare;
            return this;
        }

        public Builder routingKey(String value) {
            routingKey = value;
            return this;
        }

        public Builder batchSize(int value) {
            batchSize = value;
            return this;
        }

        public Builder batchBytes(long value) {
            batchBytes = value;
            return this;
        }

        public Builder maxIdle(Duration value) {
            maxIdle = value;
            return this;
        }

        public Builder lease(Duration value) {
            lease = value;
            return this;
        }

        public Builder maxAttempts(int value) {
            maxAttempts = value;
            return this;
        }

        /** The first retry's delay and the cap of its doubling. */
        public Builder retryDelay(Duration first, Duration max) {
            retryDelay = first;
            retryDelayMax = max;
            return this;
        }

        public Builder publishTimeout(Duration value) {
            publishTimeout = value;
            return this;
        }

        /** The dead set's bounds: most letters kept, longest kept. */
        public Builder deadBounds(int maxSize, Duration maxAge) {
            deadMaxSize = maxSize;
            deadMaxAge = maxAge;
            return this;
        }

        public Builder paused(boolean value) {
            paused = value;
            return this;
        }

        public Builder outgoing(OutgoingMessages value) {
            outgoing = value;
            return this;
        }

        public Builder maxLateness(Duration value) {
            maxLateness = value;
            return this;
        }

        public Builder dropLate(boolean value) {
            dropLate = value;
            return this;
        }

        public Builder maxRate(int value) {
            maxRate = value;
            return this;
        }

        /** The on-time objective: on time within {@code onTime}, a share {@code target} of messages. */
        public Builder slo(Duration onTime, double target) {
            sloOnTime = onTime;
            sloTarget = target;
            return this;
        }

        public Builder messageShape(MessageShape value) {
            messageShape = value;
            return this;
        }

        public Builder linger(Duration value) {
            linger = value;
            return this;
        }

        public Builder lead(Duration value) {
            lead = value;
            return this;
        }

        public Builder coldAfter(Duration value) {
            coldAfter = value;
            return this;
        }

        public BusinessSpec build() {
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
                    maxLateness,
                    dropLate,
                    maxRate,
                    sloOnTime,
                    sloTarget,
                    messageShape,
                    linger,
                    coldAfter,
                    lead);
        }
    }
}
