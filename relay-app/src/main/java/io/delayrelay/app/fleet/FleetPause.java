package io.delayrelay.app.fleet;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.BusinessState;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.context.SmartLifecycle;

/**
 * Pause that holds for the whole fleet and across restarts: an operator's pause lives in {@code K:meta}; every
 * instance reads it once per {@code max-idle} (the smallest of its businesses', within 50 ms..1 s) and sets the
 * operator pause of its {@link BusinessState}. Configuration's {@code paused} combines with it there: a business is
 * paused while either says so.
 * The first read happens when the bean is initialized, before any lifecycle starts (Spring starts the engine this
 * bean depends on before this bean's own start): a restarted instance comes up paused without popping a batch.
 */
public class FleetPause implements SmartLifecycle, InitializingBean {

    private static final Logger log = LoggerFactory.getLogger(FleetPause.class);
    static final Duration MIN_INTERVAL = Duration.ofMillis(50);
    static final Duration MAX_INTERVAL = Duration.ofSeconds(1);

    private final RelayEngine engine;
    private final OperatorPauseStore store;
    /** The operator pause last read from Redis, per business. */
    private final Map<String, OperatorPause> operator = new ConcurrentHashMap<>();

    private volatile boolean redisDown;
    private ScheduledExecutorService follower;
    private volatile boolean running;

    public FleetPause(RelayEngine engine, OperatorPauseStore store) {
        this.engine = engine;
        this.store = store;
    }

    /** Configuration's and the operator's pause of a business. */
    public PauseState state(BusinessRelay relay) {
        return new PauseState(
                relay.spec().paused(), operator.getOrDefault(relay.spec().name(), OperatorPause.NONE));
    }

    /** Pauses the business on every instance (this one at once, the others within their max-idle). */
    public PauseState pause(BusinessRelay relay, String by) {
        OperatorPause stored = store.pause(relay.spec().keys(), by);
        operator.put(relay.spec().name(), stored);
        apply(relay);
        log.info(
                "business={}: paused for every relay instance by {}",
                relay.spec().name(),
                by);
        return state(relay);
    }

    /** Lifts the operator's pause on every instance. */
    public PauseState resume(BusinessRelay relay, String by) {
        store.resume(relay.spec().keys());
        operator.put(relay.spec().name(), OperatorPause.NONE);
        apply(relay);
        log.info(
                "business={}: resumed for every relay instance by {}{}",
                relay.spec().name(),
                by,
                relay.spec().paused() ? " (configuration still says paused: true)" : "");
        return state(relay);
    }

    /** Reads every business's operator pause and applies it; a Redis error keeps the last known state. */
    public void follow() {
        for (BusinessRelay relay : engine.relays().values()) {
            BusinessSpec spec = relay.spec();
            OperatorPause previous = operator.get(spec.name());
            OperatorPause now = readOr(spec, previous == null ? OperatorPause.NONE : previous);
            operator.put(spec.name(), now);
            apply(relay);
        }
    }

    private OperatorPause readOr(BusinessSpec spec, OperatorPause fallback) {
        try {
            OperatorPause read = store.read(spec.keys());
            if (redisDown) {
                redisDown = false;
                log.info("operator pause state readable again from Redis");
            }
            return read;
        } catch (RuntimeException e) {
            if (!redisDown) {
                redisDown = true;
                log.warn(
                        "business={}: cannot read the operator pause from Redis ({}); keeping the last known state",
                        spec.name(),
                        e.getClass().getSimpleName());
            }
            return fallback;
        }
    }

    private void apply(BusinessRelay relay) {
        BusinessState state = relay.state();
        OperatorPause op = operator.getOrDefault(relay.spec().name(), OperatorPause.NONE);
        if (state.operatorPaused() != op.paused()) {
            state.setOperatorPaused(op.paused());
            log.info(
                    "business={}: {} by {} (configuration paused={})",
                    relay.spec().name(),
                    op.paused() ? "paused for every instance" : "operator pause lifted",
                    op.paused() ? op.by() : "an operator",
                    relay.spec().paused());
        }
    }

    /** How often instances look at the operator pause: the smallest max-idle of the businesses, bounded. */
    Duration interval() {
        Duration smallest = MAX_INTERVAL;
        for (BusinessRelay relay : engine.relays().values()) {
            Duration maxIdle = relay.spec().maxIdle();
            if (maxIdle.compareTo(smallest) < 0) {
                smallest = maxIdle;
            }
        }
        return smallest.compareTo(MIN_INTERVAL) < 0 ? MIN_INTERVAL : smallest;
    }

    /** Applies the stored operator pause before the engine starts its workers. */
    @Override
    public void afterPropertiesSet() {
        follow();
    }

    @Override
    public synchronized void start() {
        if (running) {
            return;
        }
        follower = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "relay-fleet-pause");
            t.setDaemon(true);
            return t;
        });
        running = true;
        scheduleNext();
    }

    private void scheduleNext() {
        if (!running || follower.isShutdown()) {
            return;
        }
        follower.schedule(
                () -> {
                    try {
                        follow();
                    } catch (RuntimeException e) {
                        log.warn("following the operator pause failed", e);
                    } finally {
                        scheduleNext();
                    }
                },
                interval().toMillis(),
                TimeUnit.MILLISECONDS);
    }

    @Override
    public synchronized void stop() {
        running = false;
        if (follower != null) {
            follower.shutdownNow();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Follows from the engine's start on; stops after it at shutdown. */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 1100;
    }
}
