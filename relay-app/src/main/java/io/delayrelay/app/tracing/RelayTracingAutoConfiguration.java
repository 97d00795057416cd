package io.delayrelay.app.tracing;

import io.delayrelay.app.engine.PublishTracing;
import io.opentelemetry.api.OpenTelemetry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Traces the relay's publishes when the application has OpenTelemetry's API and an {@link OpenTelemetry} bean (what
 * Spring Boot 4's OpenTelemetry starter, {@code spring-boot-starter-opentelemetry}, configures): each publish of a
 * message carrying a producer's {@code traceparent} is a span linked to the producer's span. Without the API on the
 * classpath this class is never loaded; without the bean, or with a {@link PublishTracing} bean of the
 * application's own (e.g. {@link PublishTracing#NONE} to turn it off), nothing is traced.
 */
@AutoConfiguration
@ConditionalOnClass(name = "io.opentelemetry.api.OpenTelemetry")
@ConditionalOnProperty(prefix = "relay", name = "enabled", matchIfMissing = true)
public class RelayTracingAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(RelayTracingAutoConfiguration.class);

    @Bean
    @ConditionalOnMissingBean
    public PublishTracing relayPublishTracing(ObjectProvider<OpenTelemetry> openTelemetry) {
        OpenTelemetry tracing = openTelemetry.getIfUnique();
        if (tracing == null) {
            return PublishTracing.NONE;
        }
        log.info("publishes of messages carrying a traceparent are traced (OpenTelemetry, spans linked to the"
                + " producer's)");
        return new OpenTelemetryPublishTracing(tracing);
    }
}
