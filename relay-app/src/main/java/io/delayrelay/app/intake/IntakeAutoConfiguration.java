package io.delayrelay.app.intake;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.config.IntakeSettings;
import io.delayrelay.app.config.RelayAutoConfiguration;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.amqp.rabbit.connection.AbstractConnectionFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;

/** The AMQP intakes ({@code relay.intakes.*}): idle when none is configured. */
@AutoConfiguration(after = RelayAutoConfiguration.class)
@ConditionalOnBean(RelayEngine.class)
public class IntakeAutoConfiguration {

    @Bean
    public IntakeMetrics relayIntakeMetrics(ObjectProvider<MeterRegistry> registry) {
        return new IntakeMetrics(registry.getIfAvailable());
    }

    @Bean
    public Intakes relayIntakes(
            Environment environment,
            org.springframework.amqp.rabbit.connection.ConnectionFactory rabbit,
            RedisConnectionFactory redisFactory,
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis,
            RedisClock clock,
            RelayEngine engine,
            IntakeMetrics metrics,
            EnvelopeCompression compression) {
        if (!(rabbit instanceof AbstractConnectionFactory spring)) {
            throw new IllegalStateException("the AMQP intakes need Spring AMQP's CachingConnectionFactory, found "
                    + rabbit.getClass().getName());
        }
        Function<String, BusinessSpec> specs = business -> {
            BusinessRelay relay = engine.relays().get(business);
            return relay == null ? null : relay.spec();
        };
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                redisFactory, 16, Duration.ofSeconds(5), b -> RedisIntakeWriter.keysOf(specs, b));
        return new Intakes(
                spring.getRabbitConnectionFactory(),
                () -> configured(environment),
                new RedisIntakeWriter(producer, redis, clock, specs, compression),
                metrics);
    }

    /** The intakes as configured now; throws naming every bad setting. */
    static Map<String, IntakeSettings> configured(Environment environment) {
        Map<String, IntakeSettings> intakes = new LinkedHashMap<>(Binder.get(environment)
                .bind("relay.intakes", Bindable.mapOf(String.class, IntakeSettings.class))
                .orElseGet(Map::of));
        List<ConfigProblem> problems = new ArrayList<>();
        IntakeSettings.validate(intakes, problems);
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
        return intakes;
    }

    /** Follows a refresh of {@code relay.intakes.*} (Nacos, /actuator/refresh). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(EnvironmentChangeEvent.class)
    static class Reload {

        @Bean
        ApplicationListener<EnvironmentChangeEvent> relayIntakesReload(Intakes intakes) {
            return event -> {
                if (event.getKeys().stream().anyMatch(k -> k.startsWith("relay.intakes"))) {
                    intakes.reload();
                }
            };
        }
    }
}
