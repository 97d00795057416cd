package io.delayrelay.app;

import java.util.Map;

import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TestRelayApplication;
import io.lettuce.core.resource.ClientResources;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;

/** What the standalone relay's own defaults ({@code delay-relay.yaml}) change in the Spring Boot stack. */
class DaemonDefaultsTest {

    private final RelayTestKit kit = new RelayTestKit();
    private ConfigurableApplicationContext context;

    @AfterEach
    void cleanUp() {
        if (context != null) {
            context.close();
        }
        kit.close();
    }

    /**
     * An observation per Redis command (timer, span) cost the relay more CPU than relaying the message at steady
     * load: the daemon leaves it off although an observation registry is there, and one property brings it back.
     */
    @Test
    void theDaemonDoesNotObserveEveryRedisCommandUnlessAskedTo() {
        context = start();
        assertThat(context.getBeanNamesForType(ObservationRegistry.class)).isNotEmpty();
        assertThat(context.getBean(ClientResources.class).tracing().isEnabled()).isFalse();
        context.close();

        context = start("--spring.autoconfigure.exclude=");
        assertThat(context.getBean(ClientResources.class).tracing().isEnabled()).isTrue();
    }

    /** The daemon's configuration files (delay-relay.yaml first); {@code args} as on its command line. */
    private ConfigurableApplicationContext start(String... args) {
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), kit.business("defaults"), kit.exchange("defaults"), "due");
        props.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
        return new SpringApplicationBuilder(TestRelayApplication.class)
                .web(WebApplicationType.NONE)
                .properties(props)
                .run(args);
    }
}
