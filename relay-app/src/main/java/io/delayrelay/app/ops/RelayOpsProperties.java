package io.delayrelay.app.ops;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** Ops endpoint settings: {@code relay.ops.*}. */
@ConfigurationProperties("relay.ops")
public class RelayOpsProperties {

    /** Header that carries the ops token. {@code Authorization: Bearer <token>} is accepted too. */
    public static final String TOKEN_HEADER = "X-Relay-Token";

    /** Default of {@link #getReadinessCheckInterval()}. */
    public static final Duration DEFAULT_READINESS_CHECK_INTERVAL = Duration.ofSeconds(1);

    /**
     * Token that write operations of the relay endpoint (pause, resume, replay, purge) require in the
     * {@value #TOKEN_HEADER} header. Unset or blank: write operations are disabled (403).
     */
    private String token;

    /** How often readiness checks that the relay's workers run. */
    private Duration readinessCheckInterval = DEFAULT_READINESS_CHECK_INTERVAL;

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

    public boolean isConsoleEnabled() {
        return consoleEnabled;
    }

    public void setConsoleEnabled(boolean consoleEnabled) {
        this.consoleEnabled = consoleEnabled;
    }

    @Override
    public String toString() {
        return "RelayOpsProperties[token=" + (hasToken() ? "******" : "<none>") + ", readinessCheckInterval="
                + readinessCheckInterval + "]";
    }
}
