package io.delayrelay.app.ops;

import java.time.Duration;

import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.PeriodicTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.availability.ApplicationAvailability;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationListener;

/**
 * Keeps readiness in step with the relay: refuses traffic while the engine's workers do not run, and from the
 * start of shutdown (it stops just before the engine drains). Boot accepts traffic once the app is ready; this
 * bean overrules that while the engine is down and gives it back when the engine runs again.
 */
public class RelayReadiness extends PeriodicTask
        implements ApplicationListener<AvailabilityChangeEvent<ReadinessState>> {

    private static final Logger log = LoggerFactory.getLogger(RelayReadiness.class);

    private final RelayEngine engine;
    private final ApplicationContext context;
    private final ApplicationAvailability availability;
    private volatile boolean refusedByRelay;

    public RelayReadiness(
            RelayEngine engine,
            ApplicationContext context,
            ApplicationAvailability availability,
            Duration checkInterval) {
        super("relay-readiness", "readiness check", Duration.ofMillis(Math.max(10, checkInterval.toMillis())));
        this.engine = engine;
        this.context = context;
        this.availability = availability;
    }

    @Override
    public void onApplicationEvent(AvailabilityChangeEvent<ReadinessState> event) {
        if (event.getState() == ReadinessState.ACCEPTING_TRAFFIC && !relayUp()) {
            refuse("relay workers are not running");
        }
    }

    @Override
    protected void runOnce() {
        check();
    }

    /** Compares the engine's state with readiness and corrects readiness. */
    void check() {
        try {
            boolean up = relayUp();
            ReadinessState state = availability.getReadinessState();
            if (!up && state == ReadinessState.ACCEPTING_TRAFFIC) {
                refuse("relay workers are not running");
            } else if (up && refusedByRelay && state == ReadinessState.REFUSING_TRAFFIC) {
                refusedByRelay = false;
                log.info("relay workers run again: readiness ACCEPTING_TRAFFIC");
                AvailabilityChangeEvent.publish(context, ReadinessState.ACCEPTING_TRAFFIC);
            }
        } catch (RuntimeException e) {
            log.debug("readiness check failed", e);
        }
    }

    private boolean relayUp() {
        return isRunning() && engine.isRunning();
    }

    private void refuse(String why) {
        refusedByRelay = true;
        log.info("{}: readiness REFUSING_TRAFFIC", why);
        AvailabilityChangeEvent.publish(context, ReadinessState.REFUSING_TRAFFIC);
    }

    /** Refuses traffic before the engine (next phase down) stops popping and drains. */
    @Override
    protected void afterStop() {
        refuse("relay is shutting down");
    }

    /** One above the engine's phase: starts after it, stops before it. */
    @Override
    public int getPhase() {
        return engine.getPhase() + 1;
    }
}
