package io.delayrelay.app.metrics;

import io.delayrelay.app.config.RelayAutoConfiguration;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.engine.SeatStore;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.RedisTemplate;

/**
 * Relay metrics when Micrometer and a {@link MeterRegistry} are present: supplies the {@link MicrometerRelayEvents}
 * the engine reports to (hence before {@link RelayAutoConfiguration}) and the {@link BacklogSampler}.
 */
@AutoConfiguration(
        before = RelayAutoConfiguration.class,
        afterName = "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration")
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnProperty(prefix = "relay", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(RelayMetricsProperties.class)
public class RelayMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(RelayEvents.class)
    public MicrometerRelayEvents relayMicrometerEvents(MeterRegistry registry) {
        return new MicrometerRelayEvents(registry);
    }

    @Bean
    @ConditionalOnMissingBean
    public BacklogReader relayBacklogReader(
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis) {
        return new BacklogReader(redis);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(MicrometerRelayEvents.class)
    public BacklogSampler relayBacklogSampler(
            RelayEngine engine,
            BacklogReader reader,
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis,
            MicrometerRelayEvents events,
            RelayMetricsProperties properties,
            RedisClock clock) {
        return new BacklogSampler(engine, reader, new SeatStore(redis), events, properties.getSampleInterval(), clock);
    }
}
