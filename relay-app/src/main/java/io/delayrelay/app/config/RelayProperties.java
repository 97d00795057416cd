package io.delayrelay.app.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.engine.wake.KeyspaceWakeSource;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
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

    /**
     * How often the relay follows the shard counts recorded in K:meta and restarts dead workers. Expired leases are
     * not looked for on a timer: the pop that sees them takes them back.
     */
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

    /**
     * While Redis or RabbitMQ is not reachable at start, how often the relay tries again (not Ready meanwhile,
     * logging a WARN each time). A server that answers and refuses the relay's credentials fails start-up.
     */
    private Duration startRetry = RelayEngine.Settings.DEFAULT_START_RETRY;

    /** Whether start-up fails when a business's exchange does not exist (and it does not declare it). */
    private boolean verifyExchanges = true;

    /**
     * Whether a worker's batch of publishes goes to the broker in one socket write (one per 64 KB) instead of one
     * per message; plain connections only (TLS keeps its own sockets).
     */
    private boolean coalesceWrites = true;

    /**
     * Intake messages of a business stored as they are before its compression dictionary is trained from them
     * (docs/amqp-intake.md, "Memory").
     */
    private int intakeDictionarySamples = EnvelopeCompression.SAMPLES;

    /** How workers learn of new entries besides the relay-api's wake-ups: {@code relay.wake.*}. */
    private Wake wake = new Wake();

    /** How the instances of the fleet divide each business's shards: {@code relay.division.*}. */
    @NestedConfigurationProperty
    private DivisionProperties division = new DivisionProperties();

    /** Settings every business inherits. */
    @NestedConfigurationProperty
    private BusinessSettings defaults = new BusinessSettings();

    /** Businesses declared by configuration, and overrides for trigger beans, by business name. */
    private Map<String, BusinessSettings> businesses = new LinkedHashMap<>();

    /** AMQP intakes (publishers send with an x-delay header, as to the delayed-message plugin), by intake name. */
    private Map<String, IntakeSettings> intakes = new LinkedHashMap<>();

    /** Recurring schedules (cron or a fixed period), by schedule name: docs/schedules.md. */
    private Map<String, ScheduleSettings> schedules = new LinkedHashMap<>();

    /**
     * Rejects relay-wide settings out of range at start-up, naming property and value like the businesses' settings
     * (see {@link BusinessSpecResolver}).
     *
     * @throws RelayConfigurationException listing every problem
     */
    void validate() {
        List<ConfigProblem> problems = new ArrayList<>();
        if (topologyVersion < 0) {
            problems.add(ConfigProblem.global("relay.topology-version", topologyVersion, "must be 0 or more"));
        }
        if (intakeDictionarySamples < EnvelopeCompression.MIN_SAMPLES) {
            problems.add(ConfigProblem.global(
                    "relay.intake-dictionary-samples",
                    intakeDictionarySamples,
                    "must be " + EnvelopeCompression.MIN_SAMPLES + " or more (zstd trains no dictionary from fewer)"));
        }
        division.validate(problems);
        IntakeSettings.validate(intakes, problems);
        ScheduleSettings.validate(schedules, null, problems);
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
    }

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

    public Duration getStartRetry() {
        return startRetry;
    }

    public void setStartRetry(Duration startRetry) {
        this.startRetry = startRetry;
    }

    public int getIntakeDictionarySamples() {
        return intakeDictionarySamples;
    }

    public void setIntakeDictionarySamples(int intakeDictionarySamples) {
        this.intakeDictionarySamples = intakeDictionarySamples;
    }

    public boolean isCoalesceWrites() {
        return coalesceWrites;
    }

    public void setCoalesceWrites(boolean coalesceWrites) {
        this.coalesceWrites = coalesceWrites;
    }

    public boolean isVerifyExchanges() {
        return verifyExchanges;
    }

    public void setVerifyExchanges(boolean verifyExchanges) {
        this.verifyExchanges = verifyExchanges;
    }

    public Wake getWake() {
        return wake;
    }

    public void setWake(Wake wake) {
        this.wake = wake;
    }

    /** {@code relay.wake.*}: keyspace notifications as the wake source for entries written by any producer. */
    public static class Wake {

        public static final Duration DEFAULT_SAFETY_SWEEP = Duration.ofSeconds(5);

        /** auto: use Redis keyspace notifications when notify-keyspace-events has K and z; off: poll at max-idle. */
        private KeyspaceWakeSource.Mode keyspaceEvents = KeyspaceWakeSource.Mode.AUTO;

        /** Whether the relay may CONFIG SET notify-keyspace-events (adding K and z) when they are missing. */
        private boolean configureRedis = false;

        /** While notifications wake the relay, how often idle workers sweep their shards anyway (lost ones). */
        private Duration safetySweep = DEFAULT_SAFETY_SWEEP;

        public KeyspaceWakeSource.Mode getKeyspaceEvents() {
            return keyspaceEvents;
        }

        public void setKeyspaceEvents(KeyspaceWakeSource.Mode keyspaceEvents) {
            this.keyspaceEvents = keyspaceEvents;
        }

        public boolean isConfigureRedis() {
            return configureRedis;
        }

        public void setConfigureRedis(boolean configureRedis) {
            this.configureRedis = configureRedis;
        }

        public Duration getSafetySweep() {
            return safetySweep;
        }

        public void setSafetySweep(Duration safetySweep) {
            this.safetySweep = safetySweep;
        }

        KeyspaceWakeSource.Settings toSettings() {
            return new KeyspaceWakeSource.Settings(keyspaceEvents, configureRedis, safetySweep);
        }
    }

    public DivisionProperties getDivision() {
        return division;
    }

    public void setDivision(DivisionProperties division) {
        this.division = division;
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

    public Map<String, IntakeSettings> getIntakes() {
        return intakes;
    }

    public void setIntakes(Map<String, IntakeSettings> intakes) {
        this.intakes = intakes;
    }

    public Map<String, ScheduleSettings> getSchedules() {
        return schedules;
    }

    public void setSchedules(Map<String, ScheduleSettings> schedules) {
        this.schedules = schedules;
    }
}
