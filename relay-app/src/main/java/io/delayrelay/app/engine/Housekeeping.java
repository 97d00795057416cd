package io.delayrelay.app.engine;

import java.util.Collection;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.delayrelay.app.support.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's housekeeping thread: every reaper interval it follows the shard counts in {@code K:meta}
 * ({@link TopologyKeeper}) and starts again the workers that died. One thread for both: neither is urgent.
 */
final class Housekeeping {

    private static final Logger log = LoggerFactory.getLogger(Housekeeping.class);

    private final Supplier<Collection<BusinessRelay>> relays;
    private final TopologyKeeper topology;
    private final long intervalMs;
    private ScheduledExecutorService thread;

    Housekeeping(Supplier<Collection<BusinessRelay>> relays, TopologyKeeper topology, long intervalMs) {
        this.relays = relays;
        this.topology = topology;
        this.intervalMs = intervalMs;
    }

    void start() {
        thread = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-housekeeping"));
        thread.scheduleWithFixedDelay(topology, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
        thread.scheduleWithFixedDelay(this::restartDeadWorkers, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }

    void stop() {
        if (thread != null) {
            thread.shutdownNow();
        }
    }

    /** A scheduled task: must not throw, or its schedule ends. */
    private void restartDeadWorkers() {
        for (BusinessRelay relay : relays.get()) {
            try {
                relay.restartDeadWorkers();
            } catch (RuntimeException e) {
                log.warn(
                        "business={}: restarting dead workers failed: {}",
                        relay.spec().name(),
                        e.toString());
            }
        }
    }
}
