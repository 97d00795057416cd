package io.delayrelay.app.config;

import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.config.ConfigDataEnvironmentPostProcessor;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Lowest-precedence defaults the relay needs, applied after config files are read:
 * <ul>
 *   <li>correlated publisher confirms and publisher returns on the RabbitMQ connection factory: the relay acks an
 *       entry only after the broker confirmed it, and dead-letters what comes back unroutable (explicit user
 *       settings win; the relay then refuses to start and names the property);</li>
 *   <li>no Nacos config unless a {@code nacos:} import is configured (profile {@code nacos}), so the relay runs
 *       without a config center.</li>
 * </ul>
 */
public class RelayDefaultsEnvironmentPostProcessor implements EnvironmentPostProcessor, Ordered {

    static final String SOURCE_NAME = "delayRelayDefaults";

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        if (environment.getPropertySources().contains(SOURCE_NAME)) {
            return;
        }
        Map<String, Object> defaults = new LinkedHashMap<>();
        defaults.put("spring.rabbitmq.publisher-confirm-type", "correlated");
        defaults.put("spring.rabbitmq.publisher-returns", "true");
        String imports = environment.getProperty("spring.config.import", "");
        if (!imports.contains("nacos:")) {
            defaults.put("spring.cloud.nacos.config.enabled", "false");
            defaults.put("spring.cloud.nacos.config.import-check.enabled", "false");
        }
        environment.getPropertySources().addLast(new MapPropertySource(SOURCE_NAME, defaults));
    }

    /** After config files are loaded, before Nacos checks for its import. */
    @Override
    public int getOrder() {
        return ConfigDataEnvironmentPostProcessor.ORDER + 500;
    }
}
