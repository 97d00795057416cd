package io.delayrelay.app.config;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

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
 *       without a config center;</li>
 *   <li>the old placeholder names of the daemon's {@code delay-relay.yaml} ({@code REDIS_HOST}, {@code REDIS_PORT},
 *       {@code RABBIT_HOST}, {@code RABBIT_PORT}, {@code MANAGEMENT_PORT}) as fallbacks of the new {@code RELAY_*}
 *       ones, but only when they hold a plain host name or port number: Kubernetes service links set
 *       {@code REDIS_PORT=tcp://10.0.0.7:6379} in every pod of a namespace with a Service named {@code redis}, and
 *       that value must not become the relay's port.</li>
 * </ul>
 */
public class RelayDefaultsEnvironmentPostProcessor implements EnvironmentPostProcessor, Ordered {

    static final String SOURCE_NAME = "delayRelayDefaults";

    private static final Pattern PORT = Pattern.compile("[0-9]{1,5}");
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9][A-Za-z0-9.:\\[\\]-]*");

    /** New placeholder name, old name, what the old value must look like. */
    private record Legacy(String name, String old, Pattern shape) {}

    private static final Legacy[] LEGACY = {
        new Legacy("RELAY_REDIS_HOST", "REDIS_HOST", HOST),
        new Legacy("RELAY_REDIS_PORT", "REDIS_PORT", PORT),
        new Legacy("RELAY_RABBIT_HOST", "RABBIT_HOST", HOST),
        new Legacy("RELAY_RABBIT_PORT", "RABBIT_PORT", PORT),
        new Legacy("RELAY_MANAGEMENT_PORT", "MANAGEMENT_PORT", PORT)
    };

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
        for (Legacy legacy : LEGACY) {
            String old = environment.getProperty(legacy.old());
            if (old != null
                    && !environment.containsProperty(legacy.name())
                    && legacy.shape().matcher(old).matches()) {
                defaults.put(legacy.name(), old);
            }
        }
        environment.getPropertySources().addLast(new MapPropertySource(SOURCE_NAME, defaults));
    }

    /** After config files are loaded, before Nacos checks for its import. */
    @Override
    public int getOrder() {
        return ConfigDataEnvironmentPostProcessor.ORDER + 500;
    }
}
