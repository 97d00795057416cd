package io.delayrelay.app.config;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.delayrelay.app.engine.BatchPublisher;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.engine.amqp.CoalescingSocketFactory;
import io.delayrelay.app.metrics.BacklogSampler;
import io.delayrelay.app.metrics.MicrometerRelayEvents;
import io.delayrelay.app.metrics.RelayMetricsAutoConfiguration;
import io.delayrelay.app.support.TestServices;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The relay's auto-configuration as a Spring slice (no application, no businesses), on the real Redis and RabbitMQ:
 * the on/off switch, running without Micrometer, and user beans winning over the relay's.
 */
class RelayAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RelayAutoConfiguration.class, RelayMetricsAutoConfiguration.class))
            .withUserConfiguration(Connections.class);

    @Configuration(proxyBeanMethods = false)
    static class Connections {
        @Bean
        LettuceConnectionFactory redisConnectionFactory() {
            TestServices.Endpoint redis = TestServices.redis();
            return new LettuceConnectionFactory(new RedisStandaloneConfiguration(redis.host(), redis.port()));
        }

        @Bean(destroyMethod = "destroy")
        CachingConnectionFactory rabbitConnectionFactory() {
            TestServices.Endpoint rabbit = TestServices.rabbit();
            CachingConnectionFactory factory = new CachingConnectionFactory(rabbit.host(), rabbit.port());
            factory.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.CORRELATED);
            factory.setPublisherReturns(true);
            return factory;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Registry {
        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class UserBeans {
        static final RelayEvents EVENTS = new RelayEvents() {};
        static final RedisClock CLOCK = new RedisClock();

        @Bean
        RelayEvents userRelayEvents() {
            return EVENTS;
        }

        @Bean
        RedisClock userRedisClock() {
            return CLOCK;
        }

        @Bean
        BatchPublisher userBatchPublisher() {
            return new BatchPublisher() {
                @Override
                public CompletableFuture<List<PublishOutcome>> publish(BusinessSpec spec, List<DueMessage> batch) {
                    return CompletableFuture.completedFuture(
                            batch.stream().map(m -> PublishOutcome.CONFIRMED).toList());
                }

                @Override
                public void prepareExchange(BusinessSpec spec) {}
            };
        }
    }

    @Test
    void relayEnabledFalseCreatesNoRelayBean() {
        runner.withUserConfiguration(Registry.class)
                .withPropertyValues("relay.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(RelayEngine.class);
                    assertThat(context).doesNotHaveBean(BatchPublisher.class);
                    assertThat(context).doesNotHaveBean(RelayEvents.class);
                    assertThat(context).doesNotHaveBean(BacklogSampler.class);
                });
    }

    @Test
    void withoutAMeterRegistryTheRelayRunsWithoutMetrics() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(RelayEngine.class);
            assertThat(context.getBean(RelayEngine.class).isRunning()).isTrue();
            assertThat(context.getBean(RelayEvents.class)).isSameAs(RelayEvents.NOOP);
            assertThat(context).doesNotHaveBean(MicrometerRelayEvents.class);
            assertThat(context).doesNotHaveBean(BacklogSampler.class);
        });
    }

    @Test
    void withAMeterRegistryTheEngineReportsToMicrometer() {
        runner.withUserConfiguration(Registry.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(RelayEvents.class)).isInstanceOf(MicrometerRelayEvents.class);
            assertThat(context).hasSingleBean(BacklogSampler.class);
        });
    }

    @Test
    void userBeansWinOverTheRelaysOwn() {
        runner.withUserConfiguration(Registry.class, UserBeans.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(RelayEvents.class);
            assertThat(context.getBean(RelayEvents.class)).isSameAs(UserBeans.EVENTS);
            assertThat(context.getBean(RedisClock.class)).isSameAs(UserBeans.CLOCK);
            assertThat(context).hasSingleBean(BatchPublisher.class);
            assertThat(context.getBean(BatchPublisher.class))
                    .hasToString(context.getBean("userBatchPublisher").toString());
            assertThat(context).doesNotHaveBean(MicrometerRelayEvents.class);
            assertThat(context).hasSingleBean(RelayEngine.class);
        });
    }

    /** The relay's connection factories are the application's: nothing else is created for them. */
    @Test
    void theRelayUsesTheApplicationsConnectionFactories() {
        runner.run(context -> {
            assertThat(context).hasSingleBean(RedisConnectionFactory.class);
            assertThat(context).hasSingleBean(ConnectionFactory.class);
        });
    }

    /**
     * The broker connection Spring Boot builds gets the relay's coalescing sockets; {@code relay.coalesce-writes=false}
     * keeps amqp-client's own, and a TLS connection keeps its TLS socket factory.
     */
    @Test
    void theBrokerConnectionSendsABatchInOneWriteUnlessTurnedOffOrTls() throws Exception {
        ApplicationContextRunner boot = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(RabbitAutoConfiguration.class, RelayAutoConfiguration.class))
                .withUserConfiguration(RedisOnly.class)
                .withPropertyValues(
                        "spring.rabbitmq.host=" + TestServices.rabbit().host(),
                        "spring.rabbitmq.port=" + TestServices.rabbit().port());
        boot.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(CachingConnectionFactory.class)
                            .getRabbitConnectionFactory()
                            .getSocketFactory())
                    .isInstanceOf(CoalescingSocketFactory.class);
        });
        boot.withPropertyValues("relay.coalesce-writes=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean("relayRabbitCoalescedWrites");
            // amqp-client's own default (none set: it uses SocketFactory.getDefault())
            assertThat(context.getBean(CachingConnectionFactory.class)
                            .getRabbitConnectionFactory()
                            .getSocketFactory())
                    .isNull();
        });

        com.rabbitmq.client.ConnectionFactory tls = new com.rabbitmq.client.ConnectionFactory();
        tls.useSslProtocol();
        javax.net.SocketFactory before = tls.getSocketFactory();
        new RelayAutoConfiguration().relayRabbitCoalescedWrites().customize(tls);
        assertThat(tls.getSocketFactory()).isSameAs(before).isInstanceOf(javax.net.ssl.SSLSocketFactory.class);
    }

    @Configuration(proxyBeanMethods = false)
    static class RedisOnly {
        @Bean
        LettuceConnectionFactory redisConnectionFactory() {
            TestServices.Endpoint redis = TestServices.redis();
            return new LettuceConnectionFactory(new RedisStandaloneConfiguration(redis.host(), redis.port()));
        }
    }
}
