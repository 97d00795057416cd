package io.delayrelay.app.metrics;

/**
 * Names and tags of every relay meter, defined once. Micrometer names are dotted; Prometheus shows them with
 * underscores, a {@code _total} suffix for counters and the base unit for timers and gauges.
 */
public final class RelayMeterNames {

    /** Counter: messages confirmed by the broker. Prometheus {@code delay_relay_relayed_total}. */
    public static final String RELAYED = "delay.relay.relayed";
    /** Timer: confirm time minus due time. Prometheus {@code delay_relay_lag_seconds_bucket/_count/_sum}. */
    public static final String LAG = "delay.relay.lag";
    /** Counter: entries moved to the dead set, tag {@link #TAG_REASON}. Prometheus {@code delay_relay_dead_lettered_total}. */
    public static final String DEAD_LETTERED = "delay.relay.dead.lettered";
    /**
     * Counter: entries removed unpublished by the late policy ({@code on-late: drop}), tag {@link #TAG_REASON}
     * ({@code expired}). Prometheus {@code delay_relay_dropped_total}. (With {@code on-late: dead} they count in
     * {@link #DEAD_LETTERED} with reason {@code expired}.)
     */
    public static final String DROPPED = "delay.relay.dropped";
    /**
     * Counter: per-message options the relay did not apply, tag {@link #TAG_REASON} ({@code relay-header}: a
     * producer header named x-delay-*, not published; {@code malformed}: an envelope it could not read, published
     * whole). Prometheus {@code delay_relay_options_ignored_total}.
     */
    public static final String OPTIONS_IGNORED = "delay.relay.options.ignored";
    /**
     * Counter: dead letters removed by the dead-set bounds, tag {@link #TAG_BOUND}. Prometheus
     * {@code delay_relay_dead_trimmed_total}.
     */
    public static final String DEAD_TRIMMED = "delay.relay.dead.trimmed";
    /** Counter: messages whose publish failed (retried), tag {@link #TAG_CAUSE}. Prometheus {@code delay_relay_publish_failures_total}. */
    public static final String PUBLISH_FAILURES = "delay.relay.publish.failures";
    /** Counter: entries put back after their lease expired. Prometheus {@code delay_relay_redeliveries_total}. */
    public static final String REDELIVERIES = "delay.relay.redeliveries";
    /** Counter: failed worker or reaper iterations. Prometheus {@code delay_relay_errors_total}. */
    public static final String ERRORS = "delay.relay.errors";
    /** Counter: worker threads that had died and were started again. Prometheus {@code delay_relay_worker_restarts_total}. */
    public static final String WORKER_RESTARTS = "delay.relay.worker.restarts";
    /** Counter: reloaded settings rejected (the business keeps its previous ones). Prometheus {@code delay_relay_config_rejected_total}. */
    public static final String CONFIG_REJECTED = "delay.relay.config.rejected";
    /** Gauge: entries per {@link #TAG_STATE}, sampled. Prometheus {@code delay_relay_backlog_messages}. */
    public static final String BACKLOG = "delay.relay.backlog";
    /** Gauge: how long the oldest due entry has been waiting, sampled. Prometheus {@code delay_relay_oldest_overdue_seconds}. */
    public static final String OLDEST_OVERDUE = "delay.relay.oldest.overdue";
    /**
     * Gauge: seconds since the backlog gauges were last sampled successfully. Prometheus
     * {@code delay_relay_backlog_sample_age_seconds}: above a few sample intervals, the backlog gauges are stale
     * (they read NaN while sampling fails).
     */
    public static final String BACKLOG_SAMPLE_AGE = "delay.relay.backlog.sample.age";
    /** Gauge: current shard count M. Prometheus {@code delay_relay_shards}. */
    public static final String SHARDS = "delay.relay.shards";
    /**
     * Gauge: shards this instance pops in the fleet's division (INCR K:cursor seats). Prometheus
     * {@code delay_relay_shards_owned}: summed over the fleet it equals the scan width when each shard has one owner.
     */
    public static final String SHARDS_OWNED = "delay.relay.shards.owned";
    /**
     * Counter: entries the cold tier moved, tag {@code direction} = {@code demoted}, {@code promoted} or
     * {@code skipped} (cancelled or scheduled again while cold). Prometheus {@code delay_relay_cold_moves_total}.
     */
    public static final String COLD_MOVES = "delay.relay.cold.moves";
    /**
     * Gauge: live cold entries of the shards this instance moves (docs/cold-tier.md). Prometheus
     * {@code delay_relay_cold_entries}; summed over the fleet it is the business's cold count.
     */
    public static final String COLD_ENTRIES = "delay.relay.cold.entries";
    /**
     * Gauge: shards of this instance's share polled instead of heard because they are busy (at least 100 keyspace
     * notifications a second: their channels are unsubscribed and the workers pop them every 10 ms). Prometheus
     * {@code delay_relay_shards_polled}; always 0 with {@code relay.wake.keyspace-events: off}.
     */
    public static final String SHARDS_POLLED = "delay.relay.shards.polled";
    /** Gauge: live seats in the business's division, as this instance last saw. Prometheus {@code delay_relay_seats}. */
    public static final String SEATS = "delay.relay.seats";
    /**
     * Gauge: 1 while this instance holds a seat in the business's division, 0 while it gave the seat up because it
     * cannot relay the business (its own configuration pauses it, RabbitMQ has not answered for give-up-after, its
     * workers are wedged; the reason is logged and in the ops view). Prometheus {@code delay_relay_seat_held}.
     */
    public static final String SEAT_HELD = "delay.relay.seat.held";
    /** Gauge: worker threads. Prometheus {@code delay_relay_threads}. */
    public static final String THREADS = "delay.relay.threads";
    /**
     * Gauge: 1 while the business is paused (configuration or a fleet-wide operator pause), else 0, sampled.
     * Prometheus {@code delay_relay_paused}: lets overdue alerts leave paused businesses out.
     */
    public static final String PAUSED = "delay.relay.paused";

    /**
     * Gauge: how a business's workers learn of plain-ZADD writes, tag {@link #TAG_MODE}: 1 for the mode in force,
     * 0 for the other. Prometheus {@code delay_relay_wake_mode{business,mode="keyspace|polling"}}: polling while
     * notifications are expected means they stopped (a Redis restart without them in redis.conf, a failover).
     */
    public static final String WAKE_MODE = "delay.relay.wake.mode";

    /**
     * Counter: messages published with a relayed-at stamp (Redis time) before their due time. Must read 0.
     * Prometheus {@code delay_relay_early_total}.
     */
    public static final String EARLY = "delay.relay.early";
    /**
     * Counter: confirmed messages whose lag was at most the business's {@code slo.on-time} (the lag histogram's
     * bucket at slo.on-time counts the same). Prometheus {@code delay_relay_on_time_total}: the on-time ratio is its
     * rate over {@code delay_relay_relayed_total}'s.
     */
    public static final String ON_TIME = "delay.relay.on.time";
    /** Gauge: the business's {@code slo.on-time}. Prometheus {@code delay_relay_slo_on_time_seconds}. */
    public static final String SLO_ON_TIME = "delay.relay.slo.on.time";
    /** Gauge: the business's {@code slo.target} (a ratio). Prometheus {@code delay_relay_slo_target}. */
    public static final String SLO_TARGET = "delay.relay.slo.target";
    /**
     * Gauge: the business's fleet-wide {@code max-rate} in messages per second, 0 without a cap. Prometheus
     * {@code delay_relay_max_rate}.
     */
    public static final String MAX_RATE = "delay.relay.max.rate";
    /**
     * Gauge: whole tokens left in the business's rate bucket ({@code K:rate}) at this instance's last charge: the
     * fleet's current allowance, 0 while the cap holds the business back; NaN without a cap. Prometheus
     * {@code delay_relay_rate_allowance_messages}.
     */
    public static final String RATE_ALLOWANCE = "delay.relay.rate.allowance";

    /** Tag: business name (every relay meter has it). */
    public static final String TAG_BUSINESS = "business";
    /** Tag of {@link #DEAD_LETTERED}: unroutable, max-attempts, lease-expired. */
    public static final String TAG_REASON = "reason";
    /** Tag of {@link #PUBLISH_FAILURES}: nack, confirm-timeout, send-failed, exchange-not-found, ... */
    public static final String TAG_CAUSE = "cause";
    /** Tag of {@link #DEAD_TRIMMED}: {@link #BOUND_MAX_SIZE} or {@link #BOUND_MAX_AGE}. */
    public static final String TAG_BOUND = "bound";
    /** Trimmed because the dead set held more than {@code dead-max-size}. */
    public static final String BOUND_MAX_SIZE = "max-size";
    /** Trimmed because it had been dead longer than {@code dead-max-age}. */
    public static final String BOUND_MAX_AGE = "max-age";
    /** Tag of {@link #WAKE_MODE}: {@link #MODE_KEYSPACE} or {@link #MODE_POLLING}. */
    public static final String TAG_MODE = "mode";
    /** Woken by Redis keyspace notifications (a safety sweep now and then). */
    public static final String MODE_KEYSPACE = "keyspace";
    /** Polling every max-idle. */
    public static final String MODE_POLLING = "polling";
    /** Tag of {@link #BACKLOG}: one of the {@code STATE_*} values. */
    public static final String TAG_STATE = "state";

    /** Due now and waiting in the shard zsets. */
    public static final String STATE_DUE = "due";
    /** In the shard zsets, not yet due. */
    public static final String STATE_SCHEDULED = "scheduled";
    /** Popped, not yet confirmed. */
    public static final String STATE_INFLIGHT = "inflight";
    /** In the dead sets. */
    public static final String STATE_DEAD = "dead";
    /** Live entries of the cold tier (docs/cold-tier.md): due later than the scheduled ones, not in the shard zsets. */
    public static final String STATE_COLD = "cold";

    /** Base unit of {@link #BACKLOG}. */
    public static final String UNIT_MESSAGES = "messages";

    private RelayMeterNames() {}
}
