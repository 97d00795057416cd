package io.delayrelay.app.ops;

import io.delayrelay.app.config.RelayAutoConfiguration;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.fleet.FleetPause;
import io.delayrelay.app.fleet.InstanceHeartbeat;
import io.delayrelay.app.fleet.RelayFleetAutoConfiguration;
import io.delayrelay.app.metrics.BacklogReader;
import io.delayrelay.app.metrics.RelayMetricsAutoConfiguration;
import io.delayrelay.app.schedule.Schedules;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.availability.ApplicationAvailability;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.core.RedisTemplate;

/**
 * Operations: the {@code relay} actuator endpoint (when actuator is present), readiness that follows the engine,
 * the dead-set trimmer, and the start-up check of Redis' eviction policy and persistence.
 * The operator token filter is added to the management context by {@link RelayOpsManagementContextConfiguration}.
 */
@AutoConfiguration(
        after = {RelayAutoConfiguration.class, RelayMetricsAutoConfiguration.class, RelayFleetAutoConfiguration.class},
        afterName = "org.springframework.boot.autoconfigure.availability.ApplicationAvailabilityAutoConfiguration")
@ConditionalOnProperty(prefix = "relay", name = "enabled", matchIfMissing = true)
@ConditionalOnBean(RelayEngine.class)
@EnableConfigurationProperties(RelayOpsProperties.class)
public class RelayOpsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(ApplicationAvailability.class)
    public RelayReadiness relayReadiness(
            RelayEngine engine,
            ApplicationContext context,
            ApplicationAvailability availability,
            RelayOpsProperties properties) {
        return new RelayReadiness(engine, context, availability, properties.getReadinessCheckInterval());
    }

    /** The operators (relay.ops.token, relay.ops.tokens.*): a token too short or shared stops start-up here. */
    @Bean
    @ConditionalOnMissingBean
    public OperatorTokens relayOperatorTokens(RelayOpsProperties properties) {
        return OperatorTokens.of(properties);
    }

    @Bean
    @ConditionalOnMissingBean
    public DeadLetters relayDeadLetters(
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis) {
        return new DeadLetters(redis);
    }

    @Bean
    @ConditionalOnMissingBean
    public RedisGuardrails relayRedisGuardrails(
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis) {
        return new RedisGuardrails(redis);
    }

    @Bean
    @ConditionalOnMissingBean
    public DeadSetTrimmer relayDeadSetTrimmer(
            RelayEngine engine,
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis,
            ObjectProvider<RelayEvents> events,
            RelayOpsProperties properties) {
        return new DeadSetTrimmer(
                engine, redis, events.getIfAvailable(() -> RelayEvents.NOOP), properties.getDeadTrimInterval());
    }

    @Bean
    @ConditionalOnMissingBean
    public ScheduledEntries relayScheduledEntries(
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis,
            ObjectProvider<EnvelopeCompression> compression) {
        return new ScheduledEntries(redis, compression.getIfAvailable());
    }

    /** The endpoint, when actuator is on the classpath. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(Endpoint.class)
    static class EndpointConfiguration {

        @Bean
        @ConditionalOnMissingBean
        public RelayOpsEndpoint relayOpsEndpoint(
                RelayEngine engine,
                @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis,
                ObjectProvider<BacklogReader> backlog,
                DeadLetters deadLetters,
                OperatorTokens operators,
                ScheduledEntries scheduled,
                ObjectProvider<MeterRegistry> meters,
                FleetPause fleetPause,
                InstanceHeartbeat heartbeat,
                ObjectProvider<Schedules> schedules) {
            BusinessViews views = new BusinessViews(
                    engine,
                    backlog.getIfAvailable(() -> new BacklogReader(redis)),
                    fleetPause,
                    heartbeat,
                    meters.getIfAvailable());
            return new RelayOpsEndpoint(
                    engine, deadLetters, operators, scheduled, fleetPause, views, new ScheduleOps(schedules));
        }
    }
}
