package io.delayrelay.app.metrics;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** Metrics settings: {@code relay.metrics.*}. */
@ConfigurationProperties("relay.metrics")
public class RelayMetricsProperties {

    /** Default of {@link #getSampleInterval()}. */
    public static final Duration DEFAULT_SAMPLE_INTERVAL = Duration.ofSeconds(15);

    /**
     * How often the backlog gauges (due, scheduled, in-flight, dead, oldest overdue) are read from Redis: by one
     * instance per round, which shares the figures with the others through K:backlog.
     */
    private Duration sampleInterval = DEFAULT_SAMPLE_INTERVAL;

    public Duration getSampleInterval() {
        return sampleInterval;
    }

    public void setSampleInterval(Duration sampleInterval) {
        this.sampleInterval = sampleInterval;
    }
}
