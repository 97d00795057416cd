package io.delayrelay.app.config;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.cloud.endpoint.event.RefreshEvent;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Issue 24 (O4 of the operations review): a misspelt key under {@code relay.*} was silently ignored. It now stops
 * start-up, and is rejected on a reload, with one report naming the key and the closest valid name.
 */
@ExtendWith(OutputCaptureExtension.class)
class UnknownRelayKeysTest {

    private final RelayTestKit kit = new RelayTestKit();

    @TempDir
    Path dir;

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    static final List<String> REJECTED = new CopyOnWriteArrayList<>();

    @Configuration(proxyBeanMethods = false)
    static class RecordingEvents {
        @Bean
        RelayEvents recordingRelayEvents() {
            return new RelayEvents() {
                @Override
                public void configRejected(String business, String problem) {
                    REJECTED.add(business + ": " + problem);
                }
            };
        }
    }

    @Test
    void aMisspeltBusinessKeyStopsStartUpNamingTheClosestValidKey() {
        String business = kit.business("typo");
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, kit.exchange("typo"), "rk", "max-atempts", "5s");
        props.put("relay.reaper-intervall", "1s");

        Throwable failure = catchThrowable(() -> kit.startRelay(props));
        FailureAnalysis analysis = new RelayFailureAnalyzer().analyze(failure);

        assertThat(analysis).as("one report from the relay's failure analyzer").isNotNull();
        assertThat(analysis.getDescription())
                .isEqualTo("Invalid delay-relay configuration:\n  - relay.businesses." + business
                        + ".max-atempts is unknown (no relay setting reads it); did you mean relay.businesses."
                        + business
                        + ".max-attempts?\n  - relay.reaper-intervall is unknown (no relay setting reads it);"
                        + " did you mean relay.reaper-interval?");
    }

    @Test
    void everyDocumentedKeyIsKnownAndMapsAcceptAnyKey() {
        StandardEnvironment environment = new StandardEnvironment();
        environment
                .getPropertySources()
                .addFirst(new MapPropertySource(
                        "test",
                        Map.of(
                                "relay.businesses.orders.exchange", "x",
                                "relay.businesses.orders.batch-bytes", "1MB",
                                "relay.businesses.orders.deadMaxAge", "1d",
                                "relay.defaults.threads", "2",
                                "relay.wake.keyspace-events", "off",
                                "relay.ops.token", "t",
                                "relay.producer.source-keys.orders", "legacy:orders",
                                "relay.reload.enabled", "true")));
        // environment variables are not checked: Kubernetes service links of a Service named "relay" set RELAY_*
        environment
                .getPropertySources()
                .addLast(new SystemEnvironmentPropertySource(
                        StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME + "-test",
                        Map.of("RELAY_PORT", "tcp://10.0.0.7:8081", "RELAY_BUSINESSES_ORDERS_MAXLATENESS", "1s")));

        assertThat(UnknownRelayKeys.fromClasspath().problems(environment)).isEmpty();

        environment
                .getPropertySources()
                .addFirst(new MapPropertySource("typo", Map.of("relay.ops.tokn", "t", "relay.bussinesses.a.b", "c")));
        assertThat(UnknownRelayKeys.fromClasspath().problems(environment))
                .extracting(p -> p.message())
                .containsExactly(
                        "relay.bussinesses.a.b is unknown (no relay setting reads it); did you mean relay.businesses?",
                        "relay.ops.tokn is unknown (no relay setting reads it); did you mean relay.ops.token?");
    }

    @Test
    void aReloadWithAnUnknownKeyIsRejectedWholeAndTheRunningSettingsStay(CapturedOutput output) throws Exception {
        REJECTED.clear();
        String business = kit.business("reloadtypo");
        String exchange = kit.exchange("reloadtypo");
        Path file = dir.resolve("relay.yaml");
        Files.writeString(file, yaml(business, exchange, "threads: 2"), StandardCharsets.UTF_8);
        Map<String, Object> props = kit.baseProperties();
        props.put("spring.config.import", "optional:file:" + file.toAbsolutePath());
        ConfigurableApplicationContext context = kit.startRelay(props, RecordingEvents.class);
        BusinessRelay relay = context.getBean(RelayEngine.class).relays().get(business);

        // a valid change next to the typo: neither is applied
        Files.writeString(file, yaml(business, exchange, "threads: 3\n      max-atempts: 5s"), StandardCharsets.UTF_8);
        context.publishEvent(new RefreshEvent(context, null, "config changed"));

        assertThat(relay.spec().threads()).as("running settings kept").isEqualTo(2);
        String problem = "relay.businesses." + business + ".max-atempts is unknown (no relay setting reads it);"
                + " did you mean relay.businesses." + business + ".max-attempts?";
        assertThat(REJECTED).containsExactly(business + ": " + problem);
        assertThat(output.getOut())
                .contains("reloaded relay configuration rejected, every business keeps its running settings:"
                        + " Invalid delay-relay configuration:\n  - " + problem);

        Files.writeString(file, yaml(business, exchange, "threads: 3"), StandardCharsets.UTF_8);
        context.publishEvent(new RefreshEvent(context, null, "config fixed"));
        assertThat(relay.spec().threads()).as("the corrected reload applies").isEqualTo(3);
    }

    private static String yaml(String business, String exchange, String more) {
        return "relay:\n  businesses:\n    " + business + ":\n      exchange: " + exchange
                + "\n      routing-key: due\n      " + more + "\n";
    }
}
