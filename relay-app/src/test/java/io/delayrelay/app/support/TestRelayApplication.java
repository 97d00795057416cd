package io.delayrelay.app.support;

import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.SpringBootConfiguration;

/** A bare Spring Boot app with auto-configuration only: what a user embedding the relay has. */
@SpringBootConfiguration
@EnableAutoConfiguration
public class TestRelayApplication {
}
