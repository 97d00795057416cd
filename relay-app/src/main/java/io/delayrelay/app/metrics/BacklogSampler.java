package io.delayrelay.app.metrics;

import java.time.Duration;
import java.util.Map;

import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.SeatStore;
import io.delayrelay.app.support.PeriodicTask;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every sample interval: registers the meters of the engine's businesses (and unregisters those that are gone),
 * then sets each business's backlog gauges. The backlog is the same for every instance, so one instance per round
 * reads it from the shards (it claims the round, {@code SET K:round:backlog NX PX}) and stores the figures in
 * {@code K:backlog}; the others read them from there (one {@code GET}), or from the shards when they are missing:
 * the cost of the per-shard reads does not grow with the number of instances. Runs on its own thread, never on a
 * scrape. A failing sample is logged and makes the business's sampled gauges read NaN, and
 * {@code delay_relay_backlog_sample_age_seconds} keeps growing: a frozen last value would keep an overdue alert quiet
 * (or firing) while nobody knows the backlog.
 */
public class BacklogSampler extends PeriodicTask {

    private static final Logger log = LoggerFactory.getLogger(BacklogSampler.class);

    private final RelayEngine engine;
    private final BacklogReader reader;
    private final SeatStore seats;
    private final MicrometerRelayEvents events;
    private final Duration interval;
    private final RedisClock clock;

    public BacklogSampler(
            RelayEngine engine,
            BacklogReader reader,
            SeatStore seats,
            MicrometerRelayEvents events,
            Duration interval) {
        this(engine, reader, seats, events, interval, new RedisClock());
    }

    /** With the Redis clock the engine keeps, to tell how old a shared reading is. */
    public BacklogSampler(
            RelayEngine engine,
            BacklogReader reader,
            SeatStore seats,
            MicrometerRelayEvents events,
            Duration interval,
            RedisClock clock) {
        super(
                "relay-backlog-sampler",
                "backlog sample",
                Duration.ZERO,
                Duration.ofMillis(Math.max(1, interval.toMillis())));
        this.engine = engine;
        this.reader = reader;
        this.seats = seats;
        this.events = events;
        this.interval = interval;
        this.clock = clock;
    }

    /** Registers meters for the engine's businesses now, before the engine reports anything. */
    public void syncBusinesses() {
        Map<String, BusinessRelay> relays = engine.relays();
        for (BusinessRelay relay : relays.values()) {
            events.register(relay.spec());
            events.pausedSampled(relay.spec().name(), relay.state().paused());
        }
        for (String name : events.registered()) {
            if (!relays.containsKey(name)) {
                events.unregister(name);
            }
        }
    }

    /** Registers the meters first: they exist before the engine (next phase up) reports anything. */
    @Override
    protected void beforeStart() {
        syncBusinesses();
    }

    @Override
    protected void runOnce() {
        sample();
    }

    /** Takes one sample of every business. */
    public void sample() {
        try {
            syncBusinesses();
        } catch (RuntimeException e) {
            log.warn("relay metrics: could not sync business meters: {}", e.toString());
        }
        for (BusinessRelay relay : engine.relays().values()) {
            BusinessSpec spec = relay.spec();
            try {
                Backlog backlog = backlog(relay, spec);
                events.backlogSampled(spec, backlog, clock.nowMs() - backlog.atMs());
            } catch (RuntimeException e) {
                events.backlogSampleFailed(spec.name());
                log.warn(
                        "business={}: backlog sample failed, backlog gauges NaN until the next success: {}",
                        spec.name(),
                        e.toString());
            }
        }
    }

    /** This round's backlog: read from the shards by the instance that claims the round, shared with the others. */
    private Backlog backlog(BusinessRelay relay, BusinessSpec spec) {
        long ms = Math.max(1, interval.toMillis());
        if (!seats.claimRound(spec.keys(), "backlog", ms * 9 / 10)) {
            Backlog shared = reader.shared(spec.keys());
            if (shared != null) {
                return shared;
            }
        }
        Backlog read = reader.read(spec, relay.state().scanWidth());
        reader.share(spec.keys(), read, ms * 3);
        return read;
    }

    /** Starts just before the engine (whose phase is {@code Integer.MAX_VALUE - 1000}), so meters exist first. */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 1001;
    }
}
