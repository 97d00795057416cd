package io.delayrelay.app.config;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

/**
 * The relay's settings under {@code relay}. Per-business settings are layered: {@code relay.defaults}, then what
 * a trigger bean sets, then {@code relay.businesses.<name>} (see {@link BusinessSpecResolver}).
 */
@ConfigurationProperties("relay")
public class RelayProperties {

    public static final Duration DEFAULT_REAPER_INTERVAL = Duration.ofSeconds(5);
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RESHARD_GRACE = Duration.ofSeconds(30);
    public static final long DEFAULT_TOPOLOGY_VERSION = 0;

    /** Whether the relay runs at all. */
    private boolean enabled = true;

    /** How often expired leases are looked for and their entries put back (or dead-lettered). */
    private Duration reaperInterval = DEFAULT_REAPER_INTERVAL;

    /** Longest wait at shutdown for workers to finish their batch (publish, confirm, ack). */
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;

    /**
     * After a business's shard count changes, retired shards are drained for at least this long, and until they
     * are empty. Longer than producers' relay.producer.meta-cache-ttl.
     */
    private Duration reshardGrace = DEFAULT_RESHARD_GRACE;

    /**
     * Version of this configuration's shard counts, recorded in K:meta. Raise it with every change of a
     * shards value rolled out by restarting instances: an instance whose version is lower than the one in
     * K:meta (an old instance during the rollout) never writes its shard count back.
     */
    private long topologyVersion = DEFAULT_TOPOLOGY_VERSION;

    /** Whether start-up fails when a business's exchange does not exist (and it does not declare it). */
    private boolean verifyExchanges = true;

    /** Settings every business inherits. */
    @NestedConfigurationProperty
    private BusinessSettings defaults = new BusinessSettings();

    /** Businesses declared by configuration, and overrides for trigger beans, by business name. */
    private Map<String, BusinessSettings> businesses = new LinkedHashMap<>();

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public Duration getReaperInterval() {
        return reaperInterval;
    }

    public void setReaperInterval(Duration reaperInterval) {
        this.reaperInterval = reaperInterval;
    }

    public Duration getShutdownTimeout() {
        return shutdownTimeout;
    }

    public void setShutdownTimeout(Duration shutdownTimeout) {
        this.shutdownTimeout = shutdownTimeout;
    }

    public Duration getReshardGrace() {
        return reshardGrace;
    }

    public void setReshardGrace(Duration reshardGrace) {
        this.reshardGrace = reshardGrace;
    }

    public long getTopologyVersion() {
        return topologyVersion;
    }

    public void setTopologyVersion(long topologyVersion) {
        this.topologyVersion = topologyVersion;
    }

    public boolean isVerifyExchanges() {
        return verifyExchanges;
    }

    public void setVerifyExchanges(boolean verifyExchanges) {
        this.verifyExchanges = verifyExchanges;
    }

    public BusinessSettings getDefaults() {
        return defaults;
    }

    public void setDefaults(BusinessSettings defaults) {
        this.defaults = defaults;
    }

    public Map<String, BusinessSettings> getBusinesses() {
        return businesses;
    }

    public void setBusinesses(Map<String, BusinessSettings> businesses) {
        this.businesses = businesses;
    }
}
