package io.delayrelay.app.config;

import java.time.Duration;

import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.util.unit.DataSize;

/**
 * Settings of one business, as bound from {@code relay.defaults} and then {@code relay.businesses.<name>}
 * (a business inherits every default it does not set).
 */
public class BusinessSettings {

    public static final int DEFAULT_SHARDS = BusinessSpec.DEFAULT_SHARDS;
    public static final int DEFAULT_THREADS = BusinessSpec.DEFAULT_THREADS;
    public static final int DEFAULT_BATCH_SIZE = BusinessSpec.DEFAULT_BATCH_SIZE;
    public static final DataSize DEFAULT_BATCH_BYTES = DataSize.ofBytes(BusinessSpec.DEFAULT_BATCH_BYTES);
    public static final Duration DEFAULT_MAX_IDLE = BusinessSpec.DEFAULT_MAX_IDLE;
    public static final Duration DEFAULT_LINGER = BusinessSpec.DEFAULT_LINGER;
    /** The longest lead allowed (pop-ahead): entries within it of their due time can no longer be cancelled. */
    public static final Duration MAX_LEAD = BusinessSpec.MAX_LEAD;
    /** The lease must be at least this many times the lead: the lease covers the wait for the due time. */
    public static final int LEASE_PER_LEAD = 10;

    /** The longest linger allowed: it adds to every message's lag. */
    public static final Duration MAX_LINGER = BusinessSpec.MAX_LINGER;

    public static final Duration DEFAULT_LEASE = BusinessSpec.DEFAULT_LEASE;
    public static final int DEFAULT_MAX_ATTEMPTS = BusinessSpec.DEFAULT_MAX_ATTEMPTS;
    public static final Duration DEFAULT_RETRY_DELAY = BusinessSpec.DEFAULT_RETRY_DELAY;
    public static final Duration DEFAULT_RETRY_DELAY_MAX = BusinessSpec.DEFAULT_RETRY_DELAY_MAX;
    public static final Duration DEFAULT_PUBLISH_TIMEOUT = BusinessSpec.DEFAULT_PUBLISH_TIMEOUT;
    public static final String DEFAULT_EXCHANGE_TYPE = BusinessSpec.DEFAULT_EXCHANGE_TYPE;
    public static final int DEFAULT_DEAD_MAX_SIZE = BusinessSpec.DEFAULT_DEAD_MAX_SIZE;
    public static final Duration DEFAULT_DEAD_MAX_AGE = BusinessSpec.DEFAULT_DEAD_MAX_AGE;
    public static final Duration DEFAULT_SLO_ON_TIME = BusinessSpec.DEFAULT_SLO_ON_TIME;
    public static final double DEFAULT_SLO_TARGET = BusinessSpec.DEFAULT_SLO_TARGET;
    public static final String DEFAULT_ON_LATE = "dead";
    public static final String DEFAULT_MESSAGE_SHAPE = "full";

    /** Source key K of the business's shards; default delayqueue:<business>. No '{' or '}'. */
    private String sourceKey;

    /** Shard count M producers hash into (CRC32 of the sharding key mod M). */
    private int shards = DEFAULT_SHARDS;

    /** Worker threads per relay instance. */
    private int threads = DEFAULT_THREADS;

    /** Worker thread name prefix; default relay-<business>-. */
    private String threadNamePrefix;

    /** Exchange the business's messages are published to. Required. */
    private String exchange;

    /** Routing key of the published messages. Required. */
    private String routingKey;

    /** Exchange type (direct, topic, fanout, headers), used when declare-exchange is true. */
    private String exchangeType = DEFAULT_EXCHANGE_TYPE;

    /** Whether the relay declares the exchange (durable) at start instead of only checking that it exists. */
    private boolean declareExchange;

    /** Most entries popped by one Lua call and published as one confirmed batch (1 to 2000). */
    private int batchSize = DEFAULT_BATCH_SIZE;

    /**
     * Most bytes (members plus payloads) one pop returns: a batch ends before the entry that would exceed it (one
     * entry is always taken), so large messages make smaller batches instead of a reply the heap cannot hold.
     */
    private DataSize batchBytes = DEFAULT_BATCH_BYTES;

    /** Longest sleep of a worker that found nothing due; a producer that does not publish a wake-up is picked up within it. */
    private Duration maxIdle = DEFAULT_MAX_IDLE;

    /** How long after the earliest due shard a worker waits for more shards to fall due, so one pop carries them all (0..1s). */
    private Duration linger = DEFAULT_LINGER;

    /**
     * Pop-ahead: a pop also leases the entries due within this long of its Redis time and the worker publishes each at
     * its due time, never before (unset or 0: off; 0..1s, at most a tenth of the lease). Within it of its due time an
     * entry may already be in flight: a cancel of it answers 0 and it is delivered.
     */
    private Duration lead;

    /**
     * How long a popped entry may stay unconfirmed before the next pop of its shard takes it back; longer than lead +
     * publish-timeout + 2 x round (the lead, or else the linger) + 150ms.
     */
    private Duration lease = DEFAULT_LEASE;

    /** Failed delivery attempts (nack, timeout, expired lease) after which an entry goes to the dead set. */
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;

    /** Delay before retrying a failed delivery; doubles with each failed attempt. */
    private Duration retryDelay = DEFAULT_RETRY_DELAY;

    /** Cap of the retry delay. */
    private Duration retryDelayMax = DEFAULT_RETRY_DELAY_MAX;

    /** Longest wait for the broker to confirm a published batch. */
    private Duration publishTimeout = DEFAULT_PUBLISH_TIMEOUT;

    /** Whether the business's workers are paused (nothing is popped). */
    private boolean paused;

    /** Most dead letters kept over all shards; past it the oldest are trimmed (with their payloads). */
    private int deadMaxSize = DEFAULT_DEAD_MAX_SIZE;

    /** How long a dead letter is kept; older ones are trimmed (with their payloads). */
    private Duration deadMaxAge = DEFAULT_DEAD_MAX_AGE;

    /**
     * Most messages per second the whole fleet publishes for this business (a token bucket in Redis, K:rate, shared by
     * every instance; bursts up to a tenth of a second's worth). None by default: as fast as the broker confirms.
     */
    private Integer maxRate;

    /** The business's fire-time objective: {@code slo.on-time} and {@code slo.target}. */
    private Slo slo = new Slo();

    /** {@code slo.*}: how late a message may be and still count as on time, and the share that must be. */
    public static class Slo {

        /** A message confirmed within this long after its due time is on time (the lag histogram has a bucket here). */
        private Duration onTime = DEFAULT_SLO_ON_TIME;

        /** Share of messages that must be on time (0 < target < 1), e.g. 0.999: the burn-rate alerts' error budget. */
        private double target = DEFAULT_SLO_TARGET;

        public Duration getOnTime() {
            return onTime;
        }

        public void setOnTime(Duration onTime) {
            this.onTime = onTime;
        }

        public double getTarget() {
            return target;
        }

        public void setTarget(double target) {
            this.target = target;
        }
    }

    /**
     * Entries due further ahead than this leave the hot shard for the cold tier (compressed blocks in Redis, a fraction
     * of the memory) and come back to it ahead of their due time (docs/cold-tier.md). Off when unset or 0 (the
     * default); at least 10 s when set.
     */
    private Duration coldAfter;

    public Duration getColdAfter() {
        return coldAfter;
    }

    public void setColdAfter(Duration coldAfter) {
        this.coldAfter = coldAfter;
    }

    public Integer getMaxRate() {
        return maxRate;
    }

    public void setMaxRate(Integer maxRate) {
        this.maxRate = maxRate;
    }

    public Slo getSlo() {
        return slo;
    }

    public void setSlo(Slo slo) {
        this.slo = slo;
    }

    /**
     * How late after its due time an entry may still be published; a pop that finds it later (on Redis time; a
     * retry counts from the original due time) sends it to the dead set with reason expired, or drops it (on-late).
     * None by default: delivered however late.
     */
    private Duration maxLateness;

    /** What happens to an entry past max-lateness or its own expiry: dead (dead set, replayable) or drop. */
    private String onLate = DEFAULT_ON_LATE;

    public Duration getMaxLateness() {
        return maxLateness;
    }

    public void setMaxLateness(Duration maxLateness) {
        this.maxLateness = maxLateness;
    }

    public String getOnLate() {
        return onLate;
    }

    public void setOnLate(String onLate) {
        this.onLate = onLate;
    }

    /**
     * What the relay puts on the messages besides the body: full (message id, content type, the x-delay-* headers) or
     * lean (message id only, x-delay-attempt on redeliveries, x-delay-id for entries scheduled by id; the broker
     * spends less per message). Both are persistent, published with mandatory, and keep the producer's headers.
     */
    private String messageShape = DEFAULT_MESSAGE_SHAPE;

    public String getMessageShape() {
        return messageShape;
    }

    public void setMessageShape(String messageShape) {
        this.messageShape = messageShape;
    }

    public String getSourceKey() {
        return sourceKey;
    }

    public void setSourceKey(String sourceKey) {
        this.sourceKey = sourceKey;
    }

    public int getShards() {
        return shards;
    }

    public void setShards(int shards) {
        this.shards = shards;
    }

    public int getThreads() {
        return threads;
    }

    public void setThreads(int threads) {
        this.threads = threads;
    }

    public String getThreadNamePrefix() {
        return threadNamePrefix;
    }

    public void setThreadNamePrefix(String threadNamePrefix) {
        this.threadNamePrefix = threadNamePrefix;
    }

    public String getExchange() {
        return exchange;
    }

    public void setExchange(String exchange) {
        this.exchange = exchange;
    }

    public String getRoutingKey() {
        return routingKey;
    }

    public void setRoutingKey(String routingKey) {
        this.routingKey = routingKey;
    }

    public String getExchangeType() {
        return exchangeType;
    }

    public void setExchangeType(String exchangeType) {
        this.exchangeType = exchangeType;
    }

    public boolean isDeclareExchange() {
        return declareExchange;
    }

    public void setDeclareExchange(boolean declareExchange) {
        this.declareExchange = declareExchange;
    }

    public int getBatchSize() {
        return batchSize;
    }

    public void setBatchSize(int batchSize) {
        this.batchSize = batchSize;
    }

    public DataSize getBatchBytes() {
        return batchBytes;
    }

    public void setBatchBytes(DataSize batchBytes) {
        this.batchBytes = batchBytes;
    }

    public Duration getMaxIdle() {
        return maxIdle;
    }

    public void setMaxIdle(Duration maxIdle) {
        this.maxIdle = maxIdle;
    }

    /**
     * How long after the earliest due time of its shards a worker waits for more of them to fall due, so that one
     * pop carries them all (0: each shard is popped as soon as it is due).
     */
    public Duration getLinger() {
        return linger;
    }

    public void setLinger(Duration linger) {
        this.linger = linger;
    }

    /** Pop-ahead's lead (null or 0: off). */
    public Duration getLead() {
        return lead;
    }

    public void setLead(Duration lead) {
        this.lead = lead;
    }

    public Duration getLease() {
        return lease;
    }

    public void setLease(Duration lease) {
        this.lease = lease;
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    public Duration getRetryDelay() {
        return retryDelay;
    }

    public void setRetryDelay(Duration retryDelay) {
        this.retryDelay = retryDelay;
    }

    public Duration getRetryDelayMax() {
        return retryDelayMax;
    }

    public void setRetryDelayMax(Duration retryDelayMax) {
        this.retryDelayMax = retryDelayMax;
    }

    public Duration getPublishTimeout() {
        return publishTimeout;
    }

    public void setPublishTimeout(Duration publishTimeout) {
        this.publishTimeout = publishTimeout;
    }

    public boolean isPaused() {
        return paused;
    }

    public void setPaused(boolean paused) {
        this.paused = paused;
    }

    public int getDeadMaxSize() {
        return deadMaxSize;
    }

    public void setDeadMaxSize(int deadMaxSize) {
        this.deadMaxSize = deadMaxSize;
    }

    public Duration getDeadMaxAge() {
        return deadMaxAge;
    }

    public void setDeadMaxAge(Duration deadMaxAge) {
        this.deadMaxAge = deadMaxAge;
    }
}
