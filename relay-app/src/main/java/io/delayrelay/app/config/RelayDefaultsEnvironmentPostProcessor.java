package io.delayrelay.app.config;

import java.util.Map;

import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Makes correlated publisher confirms and publisher returns the default for the RabbitMQ connection factory: the
 * relay acks an entry only after the broker confirmed it, and dead-letters what comes back unroutable. Explicit
 * user settings win (the relay then refuses to start and says which property to set).
 */
public class RabbitDefaultsEnvironmentPostProcessor implements EnvironmentPostProcessor {

    static final String SOURCE_NAME = "delayRelayRabbitDefaults";

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        if (!environment.getPropertySources().contains(SOURCE_NAME)) {
            environment.getPropertySources().addLast(new MapPropertySource(SOURCE_NAME, Map.of(
                    "spring.rabbitmq.publisher-confirm-type", "correlated",
                    "spring.rabbitmq.publisher-returns", "true")));
        }
    }
}
