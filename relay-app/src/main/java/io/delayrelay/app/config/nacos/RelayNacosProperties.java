package io.delayrelay.app.config.nacos;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** How the relay treats its Nacos config center (profile {@code nacos}): {@code relay.nacos.*}. */
@ConfigurationProperties("relay.nacos")
public class RelayNacosProperties {

    /** Default of {@link #getCheckInterval()}. */
    public static final Duration DEFAULT_CHECK_INTERVAL = Duration.ofSeconds(5);

    /**
     * Whether the relay may start without its Nacos data: server unreachable or data id missing at start. false:
     * start-up fails with one line naming server and data id. true: it starts on local configuration with a WARN
     * naming them, and applies the data id when the server answers.
     */
    private boolean optional = false;

    /** How often the connection to the Nacos server is checked (a lost or regained connection is logged once). */
    private Duration checkInterval = DEFAULT_CHECK_INTERVAL;

    public boolean isOptional() {
        return optional;
    }

    public void setOptional(boolean optional) {
        this.optional = optional;
    }

    public Duration getCheckInterval() {
        return checkInterval;
    }

    public void setCheckInterval(Duration checkInterval) {
        this.checkInterval = checkInterval;
    }
}
