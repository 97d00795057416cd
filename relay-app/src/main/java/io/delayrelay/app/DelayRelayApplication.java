package io.delayrelay.app;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The relay as a standalone daemon. Businesses come from {@code relay.businesses.*} and trigger beans. */
@SpringBootApplication
public class DelayRelayApplication {

    public static void main(String[] args) {
        SpringApplication.run(DelayRelayApplication.class, args);
    }
}
