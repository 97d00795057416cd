package io.delayrelay.app.support;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;

/** A bare Spring Boot app with auto-configuration only: what a user embedding the relay has. */
@SpringBootConfiguration
@EnableAutoConfiguration
public class TestRelayApplication {}
