package io.delayrelay.helm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;

import io.delayrelay.app.config.BusinessSettings;
import io.delayrelay.app.config.BusinessSpecResolver;
import io.delayrelay.app.config.RelayProperties;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.io.ByteArrayResource;

import static org.assertj.core.api.Assertions.assertThat;

/** The application.yaml the chart renders (and the compose demo's) is what the relay actually accepts. */
class RenderedConfigBindsToRelayTest {

    @Test
    void fullValuesBindToRelayProperties() throws IOException {
        StandardEnvironment environment =
                environmentOf(Chart.template(Chart.FULL_VALUES).applicationYaml());

        RelayProperties relay =
                Binder.get(environment).bind("relay", RelayProperties.class).get();

        assertThat(relay.getReaperInterval()).isEqualTo(Duration.ofSeconds(2));
        assertThat(relay.getShutdownTimeout()).isEqualTo(Duration.ofSeconds(20));
        assertThat(relay.getDefaults().getBatchSize()).isEqualTo(200);
        assertThat(relay.getBusinesses()).containsOnlyKeys("order-timeout", "review-default");
        BusinessSettings orders = relay.getBusinesses().get("order-timeout");
        assertThat(orders.getExchange()).isEqualTo("order.events");
        assertThat(orders.getShards()).isEqualTo(32);
        assertThat(orders.getMaxIdle()).isEqualTo(Duration.ofMillis(20));
        assertThat(orders.isDeclareExchange()).isTrue();
    }

    @Test
    void fullValuesResolveToBusinessSpecsWithDefaultsApplied() throws IOException {
        StandardEnvironment environment =
                environmentOf(Chart.template(Chart.FULL_VALUES).applicationYaml());

        List<BusinessSpec> specs = BusinessSpecResolver.resolve(environment, List.of());

        assertThat(specs).extracting(BusinessSpec::name).containsExactly("order-timeout", "review-default");
        BusinessSpec orders = specs.get(0);
        assertThat(orders.route().exchange()).isEqualTo("order.events");
        assertThat(orders.route().type()).isEqualTo("topic");
        assertThat(orders.shards()).isEqualTo(32);
        assertThat(orders.threads()).isEqualTo(4);
        assertThat(orders.batch().size()).as("from relay.defaults").isEqualTo(200);
        assertThat(orders.timing().maxIdle()).isEqualTo(Duration.ofMillis(20));
        assertThat(orders.keys().sourceKey()).isEqualTo("delayqueue:order-timeout");
        BusinessSpec reviews = specs.get(1);
        assertThat(reviews.keys().sourceKey()).isEqualTo("reviews:delayed");
        assertThat(reviews.batch().size()).isEqualTo(500);
        assertThat(reviews.threadNamePrefix()).isEqualTo("review-");
        assertThat(reviews.retry().delayMax()).isEqualTo(Duration.ofMinutes(10));
    }

    @Test
    void defaultValuesResolveToNoBusinessesWithoutError() throws IOException {
        StandardEnvironment environment = environmentOf(Chart.template(null).applicationYaml());

        assertThat(BusinessSpecResolver.resolve(environment, List.of())).isEmpty();
        assertThat(Binder.get(environment)
                        .bind("relay", RelayProperties.class)
                        .get()
                        .isEnabled())
                .isTrue();
    }

    @Test
    void composeDemoConfigResolvesToItsBusiness() throws IOException {
        String yaml = Files.readString(Chart.REPOSITORY.resolve("compose/application.yaml"));

        List<BusinessSpec> specs = BusinessSpecResolver.resolve(environmentOf(yaml), List.of());

        assertThat(specs).singleElement().satisfies(spec -> {
            assertThat(spec.name()).isEqualTo("order-timeout");
            assertThat(spec.route().exchange()).isEqualTo("demo.delayed");
            assertThat(spec.route().routingKey()).isEqualTo("order.timeout");
            assertThat(spec.shards()).isEqualTo(4);
        });
    }

    /** Only the given YAML: neither the OS environment nor system properties can leak into the binding. */
    private static StandardEnvironment environmentOf(String yaml) throws IOException {
        StandardEnvironment environment = new StandardEnvironment();
        MutablePropertySources sources = environment.getPropertySources();
        sources.remove(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME);
        sources.remove(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME);
        new YamlPropertySourceLoader()
                .load("application.yaml", new ByteArrayResource(yaml.getBytes(StandardCharsets.UTF_8)))
                .forEach(sources::addLast);
        return environment;
    }
}
