package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.Set;

import io.delayrelay.api.internal.ShardTopology;
import io.delayrelay.app.trigger.BusinessSpec;

/**
 * What one business runs with right now: the configuration in force, and the runtime state that configuration
 * does not hold. The scan width (shards looked at: the shard count, or more while a larger count still drains)
 * follows {@code K:meta} by {@link ShardTopology#scanWidth(int)}, the rule producers use too; pause is the configuration's or the operator's; quarantined shards are
 * skipped for a while. Every change that workers must notice while asleep calls the change listener.
 */
public final class BusinessState {

    private final ShardQuarantine quarantine;
    private final Runnable onChange;
    private volatile BusinessSpec spec;
    private volatile int scanWidth;
    private volatile boolean operatorPaused;
    private volatile long safetySweepMs;

    BusinessState(BusinessSpec spec, ShardQuarantine quarantine, Runnable onChange) {
        this.spec = spec;
        this.quarantine = quarantine;
        this.onChange = onChange;
        this.scanWidth = spec.shards();
    }

    /** The configuration in force. */
    public BusinessSpec spec() {
        return spec;
    }

    /** Shards scanned: 0 .. scanWidth-1. Never below the configured shard count. */
    public int scanWidth() {
        return scanWidth;
    }

    /** Whether the workers are paused: by configuration or by an operator. */
    public boolean paused() {
        return spec.paused() || operatorPaused;
    }

    /** Whether an operator paused the business (the configuration may pause it as well). */
    public boolean operatorPaused() {
        return operatorPaused;
    }

    /** Pauses or resumes on an operator's behalf; the configuration's {@code paused} still applies on its own. */
    public void setOperatorPaused(boolean paused) {
        operatorPaused = paused;
        onChange.run();
    }

    /**
     * While keyspace notifications wake the workers, an idle worker sleeps up to the safety sweep instead of
     * max-idle; {@code null} turns polling at max-idle back on.
     */
    void useSafetySweep(Duration sweep) {
        safetySweepMs = sweep == null ? 0 : sweep.toMillis();
    }

    /** Whether notifications wake the workers, so that one instance's safety sweep per round is enough. */
    boolean sweepsShared() {
        return safetySweepMs > 0;
    }

    /** How long an idle worker sleeps at most before it sweeps its shards again. */
    long idleMillis() {
        return Math.max(spec.timing().maxIdle().toMillis(), safetySweepMs);
    }

    /** Shards currently set aside because their keys hold unexpected data. */
    public Set<Integer> quarantinedShards() {
        return quarantine.shards();
    }

    ShardQuarantine quarantine() {
        return quarantine;
    }

    /**
     * Puts new configuration in force. The scan width only grows here: shards beyond the new count keep being
     * scanned until {@link #followTopology} finds their counts retired. {@code meta} is what {@code K:meta} says
     * after a reshard, or null when the shard count did not change.
     */
    synchronized void apply(BusinessSpec next, ShardTopology meta) {
        spec = next;
        setScanWidth(Math.max(scanWidth, meta == null ? next.shards() : meta.scanWidth(next.shards())));
    }

    /**
     * Scans exactly what the shard count and the shard counts {@code K:meta} records (the one in force, possibly
     * another instance's, and those still draining) need.
     */
    synchronized void followTopology(ShardTopology meta) {
        setScanWidth(meta.scanWidth(spec.shards()));
    }

    private void setScanWidth(int width) {
        if (width != scanWidth) {
            scanWidth = width;
            onChange.run();
        }
    }
}
