package io.delayrelay.app.ops;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Ops endpoint settings: {@code relay.ops.*}. The tokens are checked and trimmed by {@link OperatorTokens} (at
 * start-up), never here: a binder only copies text.
 */
@ConfigurationProperties("relay.ops")
public class RelayOpsProperties {

    /** Header that carries the ops token. Authorization: Bearer <token> is accepted too. */
    public static final String TOKEN_HEADER = "X-Relay-Token";

    /** Default of {@link #getDeadTrimInterval()}. */
    public static final Duration DEFAULT_DEAD_TRIM_INTERVAL = Duration.ofMinutes(1);

    /** Default of {@link #getReadinessCheckInterval()}. */
    public static final Duration DEFAULT_READINESS_CHECK_INTERVAL = Duration.ofSeconds(1);

    /**
     * Token of the operator named "default": the relay endpoint's listings (which show message bodies) and its write
     * operations (pause, resume, replay, purge, cancel, deliver-now) need it, or one of relay.ops.tokens, in the
     * X-Relay-Token header. At least 16 characters; surrounding whitespace (a Secret file's trailing newline) is
     * ignored. No token at all: listings and writes are disabled (403).
     */
    private String token;

    /**
     * Named operator tokens, name -> token (e.g. relay.ops.tokens.alice, RELAY_OPS_TOKENS_ALICE from a Secret): the
     * audit line of each write names the operator whose token was presented. Same rules as relay.ops.token.
     */
    private Map<String, String> tokens = new LinkedHashMap<>();

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

    public Map<String, String> getTokens() {
        return tokens;
    }

    public void setTokens(Map<String, String> tokens) {
        this.tokens = tokens;
    }

    /** Whether any operator token is configured (listings and writes are enabled). */
    public boolean hasToken() {
        return (token != null && !token.isBlank()) || tokens.values().stream().anyMatch(t -> t != null && !t.isBlank());
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
        return "RelayOpsProperties[token=" + (token != null && !token.isBlank() ? "******" : "<none>") + ", tokens="
                + tokens.keySet() + ", readinessCheckInterval="
                + readinessCheckInterval + ", deadTrimInterval=" + deadTrimInterval + ", consoleEnabled="
                + consoleEnabled + "]";
    }
}
