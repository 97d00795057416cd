package io.delayrelay.app.ops;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** Ops endpoint settings: {@code relay.ops.*}. */
@ConfigurationProperties("relay.ops")
public class RelayOpsProperties {

    /** Header that carries the ops token. Authorization: Bearer <token> is accepted too. */
    public static final String TOKEN_HEADER = "X-Relay-Token";

    /** Default of {@link #getDeadTrimInterval()}. */
    public static final Duration DEFAULT_DEAD_TRIM_INTERVAL = Duration.ofMinutes(1);

    /** Default of {@link #getReadinessCheckInterval()}. */
    public static final Duration DEFAULT_READINESS_CHECK_INTERVAL = Duration.ofSeconds(1);

    /**
     * Token that write operations of the relay endpoint (pause, resume, replay, purge) require in the
     * X-Relay-Token header. Unset or blank: write operations are disabled (403).
     */
    private String token;

    /** How often readiness checks that the relay's workers run. */
    private Duration readinessCheckInterval = DEFAULT_READINESS_CHECK_INTERVAL;

    /** How often each business's dead set is trimmed to its dead-max-size and dead-max-age. */
    private Duration deadTrimInterval = DEFAULT_DEAD_TRIM_INTERVAL;

    /**
     * Whether the operator console is served at /relay-console on the management port. It reads through the relay
     * endpoint; writes and message bodies need the token.
     */
    private boolean consoleEnabled = true;

    public String getToken() {
        return token;
    }

    public void setToken(String token) {
        this.token = token;
    }

    public boolean hasToken() {
        return token != null && !token.isBlank();
    }

    public Duration getReadinessCheckInterval() {
        return readinessCheckInterval;
    }

    public void setReadinessCheckInterval(Duration readinessCheckInterval) {
        this.readinessCheckInterval = readinessCheckInterval;
    }

    public Duration getDeadTrimInterval() {
        return deadTrimInterval;
    }

    public void setDeadTrimInterval(Duration deadTrimInterval) {
        this.deadTrimInterval = deadTrimInterval;
    }

    public boolean isConsoleEnabled() {
        return consoleEnabled;
    }

    public void setConsoleEnabled(boolean consoleEnabled) {
        this.consoleEnabled = consoleEnabled;
    }

    @Override
    public String toString() {
        return "RelayOpsProperties[token=" + (hasToken() ? "******" : "<none>") + ", readinessCheckInterval="
                + readinessCheckInterval + ", deadTrimInterval=" + deadTrimInterval + ", consoleEnabled="
                + consoleEnabled + "]";
    }
}
