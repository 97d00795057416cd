package io.delayrelay.app.fleet;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** Settings of the fleet-wide state: {@code relay.fleet.*}. */
@ConfigurationProperties("relay.fleet")
public class RelayFleetProperties {

    /** Default of {@link #getHeartbeatInterval()}. */
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(5);

    /**
     * How often each instance records its heartbeat in K:instances. An instance is listed as live while its
     * latest heartbeat is at most 3 intervals old.
     */
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;

    /** Default of {@link #getPauseRecheckInterval()}. */
    public static final Duration DEFAULT_PAUSE_RECHECK_INTERVAL = Duration.ofSeconds(2);

    /**
     * How often each instance reads every business's operator pause from K:meta even without a notice. A pause or
     * resume sent to the ops endpoint (or console) reaches every instance at once through a notice on K:wake; this
     * bounds how late one written by other means (redis-cli HSET without PUBLISH K:wake meta) is followed.
     */
    private Duration pauseRecheckInterval = DEFAULT_PAUSE_RECHECK_INTERVAL;

    /** This instance's id in K:instances; unset: host name and process id. */
    private String instanceId;

    public Duration getHeartbeatInterval() {
        return heartbeatInterval;
    }

    public void setHeartbeatInterval(Duration heartbeatInterval) {
        this.heartbeatInterval = heartbeatInterval;
    }

    public Duration getPauseRecheckInterval() {
        return pauseRecheckInterval;
    }

    public void setPauseRecheckInterval(Duration pauseRecheckInterval) {
        this.pauseRecheckInterval = pauseRecheckInterval;
    }

    public String getInstanceId() {
        return instanceId;
    }

    public void setInstanceId(String instanceId) {
        this.instanceId = instanceId;
    }
}
