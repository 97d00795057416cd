package io.delayrelay.app.fleet;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.MetaFields;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.BusinessState;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.trigger.BusinessSpec;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.context.SmartLifecycle;

/**
 * Pause that holds for the whole fleet and across restarts: an operator's pause lives in {@code K:meta}. The
 * instance that writes a pause or resume publishes {@link MetaFields#CHANGED_NOTICE} on the business's
 * {@code K:wake}; every instance re-reads {@code K:meta} when it hears that notice and after every (re)subscription
 * of the channel (a notice may have been missed while it was down), and sets the operator pause of its
 * {@link BusinessState}. A slow re-read every {@code recheck} interval backs this up: a pause written without the
 * notice (redis-cli) is followed within it. Configuration's {@code paused} combines with it there: a business is
 * paused while either says so.
 * The first read happens when the bean is initialized, before any lifecycle starts (Spring starts the engine this
 * bean depends on before this bean's own start): a restarted instance comes up paused without popping a batch. A
 * business added by a reload is read the same way, before its workers start.
 */
public class FleetPause implements SmartLifecycle, InitializingBean, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(FleetPause.class);

    private final RelayEngine engine;
    private final OperatorPauseStore store;
    private final Duration recheck;
    /** The operator pause last read from Redis, per business. */
    private final Map<String, OperatorPause> operator = new ConcurrentHashMap<>();
    /** Businesses whose K:meta re-read is queued: a burst of notices costs one read. */
    private final Set<String> queued = ConcurrentHashMap.newKeySet();
    /** Reads K:meta off the subscriber's thread, one read at a time. */
    private final ScheduledExecutorService follower =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-fleet-pause"));

    private volatile boolean redisDown;
    private ScheduledFuture<?> rechecks;
    private volatile boolean running;

    /**
     * @param recheck how often every business's pause is read again regardless of notices (the bound for a pause
     *                written without one)
     */
    public FleetPause(RelayEngine engine, OperatorPauseStore store, Duration recheck) {
        if (recheck == null || recheck.isZero() || recheck.isNegative()) {
            throw new IllegalArgumentException("relay.fleet.pause-recheck-interval must be positive, was " + recheck);
        }
        this.engine = engine;
        this.store = store;
        this.recheck = recheck;
    }

    /** Configuration's and the operator's pause of a business. */
    public PauseState state(BusinessRelay relay) {
        return new PauseState(
                relay.spec().paused(), operator.getOrDefault(relay.spec().name(), OperatorPause.NONE));
    }

    /**
     * Pauses the business on every instance (this one at once, the others when they hear the notice); {@code by} (the operator) is stored with the pause, the audit line
     * adds where the request came from.
     */
    public PauseState pause(BusinessRelay relay, String by, @Nullable String from) {
        OperatorPause stored = store.pause(relay.spec().keys(), by);
        operator.put(relay.spec().name(), stored);
        apply(relay);
        log.info(
                "business={}: paused for every relay instance by {}{}",
                relay.spec().name(),
                by,
                from == null ? "" : " from " + from);
        return state(relay);
    }

    /** Lifts the operator's pause on every instance; the audit line names the operator and the origin. */
    public PauseState resume(BusinessRelay relay, String by, @Nullable String from) {
        store.resume(relay.spec().keys());
        operator.put(relay.spec().name(), OperatorPause.NONE);
        apply(relay);
        log.info(
                "business={}: resumed for every relay instance by {}{}{}",
                relay.spec().name(),
                by,
                from == null ? "" : " from " + from,
                relay.spec().paused() ? " (configuration still says paused: true)" : "");
        return state(relay);
    }

    /** Reads every business's operator pause and applies it; a Redis error keeps the last known state. */
    public void follow() {
        for (BusinessRelay relay : engine.relays().values()) {
            follow(relay);
        }
    }

    /** Reads one business's operator pause and applies it; a Redis error keeps the last known state. */
    void follow(BusinessRelay relay) {
        BusinessSpec spec = relay.spec();
        OperatorPause previous = operator.get(spec.name());
        OperatorPause now = readOr(spec, previous == null ? OperatorPause.NONE : previous);
        operator.put(spec.name(), now);
        apply(relay);
    }

    /** K:meta of a business may have changed (a notice, a resubscription): re-read it soon, off this thread. */
    void heard(BusinessRelay relay) {
        String name = relay.spec().name();
        if (!queued.add(name)) {
            return;
        }
        try {
            follower.execute(() -> {
                queued.remove(name);
                try {
                    follow(relay);
                } catch (RuntimeException e) {
                    log.warn("business={}: following the operator pause failed", name, e);
                }
            });
        } catch (RejectedExecutionException e) {
            queued.remove(name); // shut down
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

    /**
     * Applies the stored operator pause before the engine starts its workers, and listens for notices. A business
     * added later by a reload reads its pause before its workers start too (it may be paused for the fleet already).
     */
    @Override
    public void afterPropertiesSet() {
        follow();
        engine.onMetaChanged(this::heard);
        engine.beforeStart(this::follow);
    }

    @Override
    public synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        long ms = Math.max(1, recheck.toMillis());
        rechecks = follower.scheduleWithFixedDelay(this::recheck, ms, ms, TimeUnit.MILLISECONDS);
    }

    private void recheck() {
        try {
            follow();
        } catch (RuntimeException e) {
            log.warn("following the operator pause failed", e);
        }
    }

    @Override
    public synchronized void stop() {
        running = false;
        if (rechecks != null) {
            rechecks.cancel(false);
            rechecks = null;
        }
    }

    @Override
    public void destroy() {
        stop();
        follower.shutdownNow();
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
