package io.delayrelay.app.config;

import java.util.Map;

import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 24 (M8 of the operations review): the daemon's placeholders were named REDIS_PORT, RABBIT_PORT and
 * MANAGEMENT_PORT, which Kubernetes service links also set (to {@code tcp://10.0.0.7:6379}) in a namespace with a
 * Service of that name. They are RELAY_* now; the old names are still read when they hold a plain port or host.
 */
class DaemonPlaceholdersTest {

    @Test
    void oldNamesAreFallbacksOnlyWhenTheyHoldAPlainPortOrHost() {
        StandardEnvironment environment = new StandardEnvironment();
        environment
                .getPropertySources()
                .addFirst(new MapPropertySource(
                        "service-links-and-old-settings",
                        Map.of(
                                "REDIS_PORT", "tcp://10.0.0.7:6379",
                                "REDIS_HOST", "redis.example",
                                "RABBIT_PORT", "5673",
                                "MANAGEMENT_PORT", "0")));

        new RelayDefaultsEnvironmentPostProcessor().postProcessEnvironment(environment, new SpringApplication());

        assertThat(environment.resolvePlaceholders("${RELAY_REDIS_PORT:6379}"))
                .as("a service link's tcp:// value is not a port")
                .isEqualTo("6379");
        assertThat(environment.resolvePlaceholders("${RELAY_REDIS_HOST:127.0.0.1}"))
                .isEqualTo("redis.example");
        assertThat(environment.resolvePlaceholders("${RELAY_RABBIT_PORT:5672}")).isEqualTo("5673");
        assertThat(environment.resolvePlaceholders("${RELAY_MANAGEMENT_PORT:8081}"))
                .isEqualTo("0");
    }

    @Test
    void theNewNameWinsOverTheOldOne() {
        StandardEnvironment environment = new StandardEnvironment();
        environment
                .getPropertySources()
                .addFirst(new MapPropertySource("both", Map.of("RELAY_REDIS_PORT", "6380", "REDIS_PORT", "6381")));

        new RelayDefaultsEnvironmentPostProcessor().postProcessEnvironment(environment, new SpringApplication());

        assertThat(environment.resolvePlaceholders("${RELAY_REDIS_PORT:6379}")).isEqualTo("6380");
    }
}
