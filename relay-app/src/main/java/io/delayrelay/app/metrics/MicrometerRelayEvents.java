package io.delayrelay.app.metrics;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.engine.DeadReason;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static io.delayrelay.app.metrics.RelayMeterNames.TAG_BUSINESS;

/**
 * Records the engine's events as Micrometer meters, per business. A business's meters exist from
 * {@link #register(BusinessSpec)} (or its first event) to {@link #unregister(String)}; the {@link BacklogSampler}
 * keeps the registered set equal to the engine's businesses, so meters follow businesses added or removed at
 * runtime. Never throws into the engine. The meters themselves, with names and descriptions, are declared in
 * {@link BusinessMeters}.
 */
public class MicrometerRelayEvents implements RelayEvents {

    private static final Logger log = LoggerFactory.getLogger(MicrometerRelayEvents.class);

    private final MeterRegistry registry;
    private final Map<String, BusinessMeters> businesses = new ConcurrentHashMap<>();

    public MicrometerRelayEvents(MeterRegistry registry) {
        this.registry = registry;
    }

    /**
     * Creates the meters of a business (idempotent); later calls update its shards, threads, rate and objective
     * gauges (and give the lag histogram a bucket at a changed slo.on-time).
     */
    public void register(BusinessSpec spec) {
        BusinessMeters meters = meters(spec);
        meters.shards.set(spec.shards());
        meters.threads.set(spec.threads());
        meters.follow(registry, spec);
    }

    private BusinessMeters meters(BusinessSpec spec) {
        BusinessMeters meters = businesses.get(spec.name());
        if (meters != null) {
            return meters;
        }
        return businesses.computeIfAbsent(spec.name(), name -> {
            BusinessMeters created = new BusinessMeters(registry, name);
            created.shards.set(spec.shards());
            created.threads.set(spec.threads());
            created.follow(registry, spec);
            return created;
        });
    }

    /** Removes every meter of a business. */
    public void unregister(String business) {
        businesses.remove(business);
        for (Meter meter : registry.getMeters()) {
            Meter.Id id = meter.getId();
            if (id.getName().startsWith("delay.relay.") && business.equals(id.getTag(TAG_BUSINESS))) {
                registry.remove(meter);
            }
        }
    }

    /** Names of the registered businesses. */
    public Set<String> registered() {
        return Set.copyOf(businesses.keySet());
    }

    /** Sets the sampled backlog gauges of a registered business, from a reading taken just now. */
    public void backlogSampled(BusinessSpec spec, Backlog backlog) {
        backlogSampled(spec, backlog, 0);
    }

    /**
     * Sets the sampled backlog gauges of a registered business; {@code ageMs} is how old the reading already is (one
     * shared by the instance that read the shards), which the sample-age gauge starts from.
     */
    public void backlogSampled(BusinessSpec spec, Backlog backlog, long ageMs) {
        BusinessMeters meters = businesses.get(spec.name());
        if (meters == null) {
            return;
        }
        meters.sampledAtNanos.set(System.nanoTime() - Math.max(0, ageMs) * 1_000_000);
        meters.stale = false;
        meters.due.set(backlog.due());
        meters.scheduled.set(backlog.scheduled());
        meters.inflight.set(backlog.inflight());
        meters.dead.set(backlog.dead());
        meters.coldSampled.set(backlog.cold());
        meters.oldestOverdueMs.set(backlog.oldestOverdueMs());
        meters.shards.set(spec.shards());
        meters.threads.set(spec.threads());
    }

    /**
     * A backlog sample of a registered business failed: its backlog and oldest-overdue gauges read NaN until the
     * next sample succeeds (a frozen last value would keep an overdue alert quiet, or firing), and the sample-age
     * gauge keeps growing.
     */
    public void backlogSampleFailed(String business) {
        BusinessMeters meters = businesses.get(business);
        if (meters != null) {
            meters.stale = true;
        }
    }

    /** Sets the paused gauge of a registered business: paused by configuration or an operator. */
    public void pausedSampled(String business, boolean paused) {
        BusinessMeters meters = businesses.get(business);
        if (meters != null) {
            meters.paused.set(paused ? 1 : 0);
        }
    }

    @Override
    public void wakeMode(BusinessSpec spec, boolean keyspace) {
        meters(spec).keyspaceMode.set(keyspace ? 1 : 0);
    }

    @Override
    public void divisionChanged(BusinessSpec spec, int owned, int seats) {
        BusinessMeters meters = meters(spec);
        meters.shardsOwned.set(owned);
        meters.seats.set(seats);
    }

    @Override
    public void seatHeld(BusinessSpec spec, boolean held) {
        meters(spec).seatHeld.set(held ? 1 : 0);
    }

    @Override
    public void shardsPolled(BusinessSpec spec, int polled) {
        meters(spec).shardsPolled.set(polled);
    }

    @Override
    public void relayed(BusinessSpec spec, int shard, List<DueMessage> messages, long confirmedAtMs) {
        try {
            BusinessMeters meters = meters(spec);
            meters.relayed.increment(messages.size());
            Timer lag = meters.lag;
            long onTimeMs = meters.onTimeMs;
            int onTime = 0;
            for (DueMessage message : messages) {
                long lagMs = Math.max(0, confirmedAtMs - message.dueAtMs());
                lag.record(lagMs, TimeUnit.MILLISECONDS);
                if (lagMs <= onTimeMs) {
                    onTime++;
                }
            }
            meters.onTime.increment(onTime);
        } catch (RuntimeException e) {
            log.debug("business={}: recording relayed metrics failed", spec.name(), e);
        }
    }

    @Override
    public void rateCharged(BusinessSpec spec, int granted, long left) {
        try {
            meters(spec).rateAllowance.set(left);
        } catch (RuntimeException e) {
            log.debug("business={}: recording the rate allowance failed", spec.name(), e);
        }
    }

    @Override
    public void publishedEarly(BusinessSpec spec, int shard, int count) {
        try {
            meters(spec).early.increment(count);
        } catch (RuntimeException e) {
            log.debug("business={}: recording early publishes failed", spec.name(), e);
        }
    }

    @Override
    public void publishFailed(BusinessSpec spec, int shard, PublishOutcome.Cause cause, int count) {
        counter(RelayMeterNames.PUBLISH_FAILURES, spec.name(), RelayMeterNames.TAG_CAUSE, cause.tag(), count);
    }

    @Override
    public void deadLettered(BusinessSpec spec, int shard, DeadReason reason, int count) {
        counter(RelayMeterNames.DEAD_LETTERED, spec.name(), RelayMeterNames.TAG_REASON, reason.tag(), count);
    }

    @Override
    public void coldMoved(BusinessSpec spec, int shard, String direction, int count) {
        counter(RelayMeterNames.COLD_MOVES, spec.name(), "direction", direction, count);
    }

    @Override
    public void coldCounted(BusinessSpec spec, long entries, long blocks) {
        meters(spec).cold.set(entries);
    }

    @Override
    public void dropped(BusinessSpec spec, int shard, DeadReason reason, int count) {
        counter(RelayMeterNames.DROPPED, spec.name(), RelayMeterNames.TAG_REASON, reason.tag(), count);
    }

    @Override
    public void optionsIgnored(BusinessSpec spec, int shard, String reason, int count) {
        counter(RelayMeterNames.OPTIONS_IGNORED, spec.name(), RelayMeterNames.TAG_REASON, reason, count);
    }

    @Override
    public void deadTrimmed(BusinessSpec spec, String bound, long count) {
        try {
            meters(spec);
            Counter.builder(RelayMeterNames.DEAD_TRIMMED)
                    .tag(TAG_BUSINESS, spec.name())
                    .tag(RelayMeterNames.TAG_BOUND, bound)
                    .register(registry)
                    .increment(count);
        } catch (RuntimeException e) {
            log.debug("business={}: recording trimmed dead letters failed", spec.name(), e);
        }
    }

    @Override
    public void leaseExpired(BusinessSpec spec, int shard, int count) {
        try {
            meters(spec).redeliveries.increment(count);
        } catch (RuntimeException e) {
            log.debug("business={}: recording redeliveries failed", spec.name(), e);
        }
    }

    @Override
    public void error(BusinessSpec spec, int shard, Throwable error) {
        try {
            meters(spec).errors.increment();
        } catch (RuntimeException e) {
            log.debug("business={}: recording an error failed", spec.name(), e);
        }
    }

    @Override
    public void workerRestarted(BusinessSpec spec, String worker) {
        try {
            meters(spec).workerRestarts.increment();
        } catch (RuntimeException e) {
            log.debug("business={}: recording a worker restart failed", spec.name(), e);
        }
    }

    /** A reloaded setting of {@code business} was rejected (called by engines that reload configuration). */
    public void configRejected(String business, String problem) {
        try {
            Counter.builder(RelayMeterNames.CONFIG_REJECTED)
                    .description("Reloaded settings rejected")
                    .tag(TAG_BUSINESS, business)
                    .register(registry)
                    .increment();
        } catch (RuntimeException e) {
            log.debug("business={}: recording config rejection failed", business, e);
        }
    }

    private void counter(String name, String business, String tag, String value, int count) {
        try {
            Counter.builder(name)
                    .tag(TAG_BUSINESS, business)
                    .tag(tag, value)
                    .register(registry)
                    .increment(count);
        } catch (RuntimeException e) {
            log.debug("business={}: recording {} failed", business, name, e);
        }
    }
}
