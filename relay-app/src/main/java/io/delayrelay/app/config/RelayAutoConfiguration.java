package io.delayrelay.app.config;

import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLSocketFactory;

import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.BatchPublisher;
import io.delayrelay.app.engine.PublishTracing;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.engine.ShardStore;
import io.delayrelay.app.engine.amqp.AmqpBatchPublisher;
import io.delayrelay.app.engine.amqp.CoalescingSocketFactory;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.engine.cold.ColdMover;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import io.delayrelay.app.trigger.BusinessSpec;
import io.lettuce.core.metrics.CommandLatencyRecorder;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.amqp.autoconfigure.ConnectionFactoryCustomizer;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;

/**
 * Wires the relay engine from {@code relay.*}, trigger beans, the Redis connection factory and the RabbitMQ
 * connection factory. Every bean can be replaced; {@code relay.enabled=false} turns the relay off.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
            "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration"
        })
@ConditionalOnProperty(prefix = "relay", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(RelayProperties.class)
public class RelayAutoConfiguration {

    /** Name of the relay's byte-array Redis template bean. */
    public static final String RELAY_REDIS_TEMPLATE = "relayRedisTemplate";

    /**
     * Lettuce records every command's latency in an HdrHistogram when HdrHistogram and LatencyUtils are on the class
     * path (Micrometer brings them), for an event that nothing here reads; on the client's event loop that was ~6 % of
     * its samples at 2,000 msg/s (docs/performance.md, "Lag at a steady rate"). Off; a bean of this name replaces it.
     */
    @Bean
    @ConditionalOnMissingBean(name = "relayLettuceLatencyRecorderOff")
    public ClientResourcesBuilderCustomizer relayLettuceLatencyRecorderOff() {
        return builder -> builder.commandLatencyRecorder(CommandLatencyRecorder.disabled());
    }

    /**
     * The broker connection's plain sockets let a worker send a batch's publishes in one socket write
     * ({@link CoalescingSocketFactory}); amqp-client writes each publish on its own. TLS connections keep their socket
     * factory. {@code relay.coalesce-writes=false} turns it off.
     */
    @Bean
    @ConditionalOnMissingBean(name = "relayRabbitCoalescedWrites")
    @ConditionalOnProperty(prefix = "relay", name = "coalesce-writes", matchIfMissing = true)
    public ConnectionFactoryCustomizer relayRabbitCoalescedWrites() {
        return factory -> {
            if (!factory.isSSL() && !(factory.getSocketFactory() instanceof SSLSocketFactory)) {
                factory.setSocketFactory(new CoalescingSocketFactory());
            }
        };
    }

    @Bean
    @ConditionalOnMissingBean
    public RedisClock relayRedisClock() {
        return new RedisClock();
    }

    @Bean
    @ConditionalOnMissingBean
    public RelayEvents relayEvents() {
        return RelayEvents.NOOP;
    }

    /**
     * The one Redis template of the relay (byte keys and values, no serializer between the relay's bytes and Redis):
     * the engine's store and the ops, metrics and fleet beans share it.
     */
    @Bean
    @ConditionalOnMissingBean(name = RELAY_REDIS_TEMPLATE)
    public RedisTemplate<byte[], byte[]> relayRedisTemplate(RedisConnectionFactory redisConnectionFactory) {
        return ByteRedisTemplates.create(redisConnectionFactory);
    }

    @Bean
    @ConditionalOnMissingBean
    public ShardStore relayShardStore(@Qualifier(RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis) {
        return new ShardStore(redis);
    }

    /** Intake messages stored compressed with a dictionary per business (docs/amqp-intake.md, "Memory"). */
    @Bean
    @ConditionalOnMissingBean
    public EnvelopeCompression relayEnvelopeCompression(
            @Qualifier(RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis, RelayProperties properties) {
        return new EnvelopeCompression(redis, properties.getIntakeDictionarySamples());
    }

    @Bean
    @ConditionalOnMissingBean
    public BatchPublisher relayBatchPublisher(
            ConnectionFactory rabbitConnectionFactory,
            RedisClock clock,
            RelayEvents events,
            ObjectProvider<PublishTracing> tracing,
            EnvelopeCompression compression) {
        return new AmqpBatchPublisher(
                rabbitConnectionFactory, clock, events, tracing.getIfAvailable(() -> PublishTracing.NONE), compression);
    }

    @Bean
    @ConditionalOnMissingBean
    public RelayBusinesses relayBusinesses(
            Environment environment, ObjectProvider<AbstractDelayedMsgScanTrigger> triggers) {
        List<BusinessSpec> specs = BusinessSpecResolver.resolve(
                environment, triggers.orderedStream().toList());
        return new RelayBusinesses(specs);
    }

    @Bean
    @ConditionalOnMissingBean
    public RelayEngine relayEngine(
            RelayBusinesses businesses,
            ShardStore store,
            BatchPublisher publisher,
            RelayEvents events,
            RedisClock clock,
            RedisConnectionFactory redisConnectionFactory,
            ConnectionFactory rabbitConnectionFactory,
            RelayProperties properties) {
        properties.validate();
        return new RelayEngine(
                businesses.specs(),
                store,
                publisher,
                events,
                clock,
                redisConnectionFactory,
                new RelayEngine.Settings(
                        properties.getReaperInterval(),
                        properties.getShutdownTimeout(),
                        properties.isVerifyExchanges(),
                        properties.getReshardGrace(),
                        properties.getTopologyVersion(),
                        properties.getWake().toSettings(),
                        properties.getStartRetry(),
                        ServiceEndpoints.redis(redisConnectionFactory),
                        ServiceEndpoints.rabbit(rabbitConnectionFactory),
                        properties.getDivision().toSettings()));
    }

    /**
     * The cold tier's mover (docs/cold-tier.md): idle unless a business sets {@code cold-after}; moves only while the
     * engine runs.
     */
    @Bean
    @ConditionalOnMissingBean
    public ColdMover relayColdMover(
            RelayEngine engine,
            @Qualifier(RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis,
            RelayEvents events,
            EnvelopeCompression compression) {
        return new ColdMover(
                () -> engine.isRunning() ? engine.relays() : Map.of(),
                new ColdStore(redis, compression::expand),
                events);
    }
}
