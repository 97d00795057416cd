package io.delayrelay.app.metrics;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 24 (O5 of the operations review): when backlog sampling fails, the backlog gauges froze at their last value,
 * so an overdue alert stayed quiet (or kept firing). Now they read NaN while sampling fails and
 * {@code delay_relay_backlog_sample_age_seconds} tells how old the last good sample is.
 */
class BacklogSampleAgeTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aFailingSampleMakesTheGaugesNaNAndTheSampleAgeGrow() throws Exception {
        String business = kit.business("stale");
        String exchange = kit.exchange("stale");
        try (PrivateRedis redis = PrivateRedis.start("")) {
            int port = redis.port();
            Map<String, Object> props = RelayTestKit.business(kit.baseProperties(), business, exchange, "due");
            props.put("spring.data.redis.port", port);
            props.put("relay.metrics.sample-interval", "200ms");
            props.put("spring.data.redis.timeout", "2s");
            props.put("relay.businesses." + business + ".paused", true);
            ConfigurableApplicationContext relay = kit.startRelay(props);
            LettuceConnectionFactory producerRedis =
                    new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
            producerRedis.afterPropertiesSet();
            producerRedis.start();
            RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(producerRedis);
            producer.schedule(business, "overdue", Instant.ofEpochMilli(redis.nowMs() - 60_000));
            producerRedis.destroy();

            MeterRegistry registry = relay.getBean(MeterRegistry.class);
            await().atMost(Duration.ofSeconds(5)).until(() -> due(registry, business) == 1.0);
            assertThat(age(registry, business)).isBetween(0.0, 3.0);
            assertThat(relay.getBean(PrometheusMeterRegistry.class).scrape())
                    .contains("delay_relay_backlog_sample_age_seconds{business=\"" + business + "\"}");

            redis.kill9();
            await().atMost(Duration.ofSeconds(10)).until(() -> Double.isNaN(due(registry, business)));
            assertThat(oldestOverdue(registry, business)).isNaN();
            await().atMost(Duration.ofSeconds(10)).until(() -> age(registry, business) > 5.0);
            assertThat(Double.isNaN(due(registry, business)))
                    .as("still NaN while Redis is gone")
                    .isTrue();

            redis.restart();
            // a good sample again: numbers instead of NaN, and the age back to fresh
            await().atMost(Duration.ofSeconds(15)).until(() -> !Double.isNaN(due(registry, business)));
            assertThat(age(registry, business)).isBetween(0.0, 3.0);
            assertThat(oldestOverdue(registry, business)).isNotNaN();
            relay.close();
        }
    }

    private static double due(MeterRegistry registry, String business) {
        return registry.get(RelayMeterNames.BACKLOG)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_STATE, RelayMeterNames.STATE_DUE)
                .gauge()
                .value();
    }

    private static double oldestOverdue(MeterRegistry registry, String business) {
        return registry.get(RelayMeterNames.OLDEST_OVERDUE)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .gauge()
                .value();
    }

    private static double age(MeterRegistry registry, String business) {
        return registry.get(RelayMeterNames.BACKLOG_SAMPLE_AGE)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .gauge()
                .value();
    }
}
