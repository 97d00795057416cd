package io.delayrelay.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;

/**
 * The relay as a standalone daemon. Businesses come from {@code relay.businesses.*} and trigger beans. Its
 * defaults are in {@code delay-relay.yaml} (and {@code delay-relay-<profile>.yaml}); {@code application.yaml}
 * files override them.
 */
@SpringBootApplication
public class DelayRelayApplication {

    /** Config file names the daemon reads; later names win. */
    public static final String CONFIG_NAME = "delay-relay,application";

    public static void main(String[] args) {
        new SpringApplicationBuilder(DelayRelayApplication.class)
                .properties("spring.config.name=" + CONFIG_NAME)
                .run(args);
    }
}
