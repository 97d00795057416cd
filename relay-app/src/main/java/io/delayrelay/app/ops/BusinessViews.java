package io.delayrelay.app.ops;

import java.util.List;

import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.BusinessState;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.fleet.FleetPause;
import io.delayrelay.app.fleet.InstanceHeartbeat;
import io.delayrelay.app.metrics.Backlog;
import io.delayrelay.app.metrics.BacklogReader;
import io.delayrelay.app.ops.OpsViews.BacklogError;
import io.delayrelay.app.ops.OpsViews.BacklogView;
import io.delayrelay.app.ops.OpsViews.BusinessView;
import io.delayrelay.app.ops.OpsViews.ConfigView;
import io.delayrelay.app.ops.OpsViews.DivisionView;
import io.delayrelay.app.ops.OpsViews.InstanceView;
import io.delayrelay.app.ops.OpsViews.PauseView;
import io.delayrelay.app.trigger.BusinessSpec;
import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;

/**
 * Builds a business's {@link BusinessView}: what it is configured to do, whether and why it is paused, its backlog
 * and the live instances. The overview takes the backlog from the fleet's shared sample ({@code K:backlog}, written
 * by whichever instance won the sampling round) when there is one: each open console tab refreshes every 5 s, and
 * reading every shard of every business for each would cost Redis more than the relaying does when idle.
 */
final class BusinessViews {

    /** Where a backlog figure came from. */
    static final String SHARED = "shared", READ = "read";

    private final RelayEngine engine;
    private final BacklogReader backlog;
    private final FleetPause fleetPause;
    private final InstanceHeartbeat heartbeat;
    private final @Nullable LocalThroughput throughput;

    BusinessViews(
            RelayEngine engine,
            BacklogReader backlog,
            FleetPause fleetPause,
            InstanceHeartbeat heartbeat,
            @Nullable MeterRegistry meters) {
        this.engine = engine;
        this.backlog = backlog;
        this.fleetPause = fleetPause;
        this.heartbeat = heartbeat;
        this.throughput = meters == null ? null : new LocalThroughput(meters);
    }

    /**
     * The view of one business; {@code sharedBacklog}: take the fleet's last sample when there is one (the
     * overview), else read the shards now (one business asked for by name).
     */
    BusinessView view(BusinessRelay relay, boolean sharedBacklog) {
        BusinessSpec spec = relay.spec();
        BusinessState state = relay.state();
        return new BusinessView(
                spec.name(),
                engine.isRunning(),
                state.paused(),
                PauseView.of(fleetPause.state(relay), state.operatorPaused()),
                spec.shards(),
                state.scanWidth(),
                DivisionView.of(relay.division(), state.scanWidth()),
                ConfigView.of(spec),
                throughput == null ? null : throughput.read(spec.name()),
                backlog(spec, state.scanWidth(), sharedBacklog),
                instances(spec));
    }

    private Object backlog(BusinessSpec spec, int width, boolean shared) {
        try {
            Backlog sample = shared ? backlog.shared(spec.keys()) : null;
            return sample != null ? BacklogView.of(sample, SHARED) : BacklogView.of(backlog.read(spec, width), READ);
        } catch (RuntimeException e) {
            return new BacklogError("Redis unavailable: " + e.getClass().getSimpleName());
        }
    }

    private List<InstanceView> instances(BusinessSpec spec) {
        try {
            return heartbeat.live(spec.keys()).stream().map(InstanceView::of).toList();
        } catch (RuntimeException e) {
            return List.of();
        }
    }
}
