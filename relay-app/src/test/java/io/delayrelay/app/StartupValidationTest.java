package io.delayrelay.app;

import java.util.Map;

import io.delayrelay.app.config.RelayFailureAnalyzer;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

class StartupValidationTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    private Map<String, Object> declared(String business, Object... more) {
        return RelayTestKit.business(kit.baseProperties(), business, kit.exchange("valid"), "rk", more);
    }

    @Test
    void missingExchangePropertyIsNamed() {
        String business = kit.business("noexch");
        Map<String, Object> props = kit.baseProperties();
        props.put("relay.businesses." + business + ".routing-key", "rk");
        assertThatThrownBy(() -> kit.startRelay(props))
                .hasStackTraceContaining("relay.businesses." + business + ".exchange='': required");
    }

    @Test
    void threadsBelowOneIsNamedWithItsValue() {
        String business = kit.business("threads");
        assertThatThrownBy(() -> kit.startRelay(declared(business, "threads", 0)))
                .hasStackTraceContaining("relay.businesses." + business + ".threads=0: must be between 1 and 256");
    }

    @Test
    void shardsBelowOneIsNamedWithItsValue() {
        String business = kit.business("shards");
        assertThatThrownBy(() -> kit.startRelay(declared(business, "shards", -3)))
                .hasStackTraceContaining("relay.businesses." + business + ".shards=-3: must be between 1 and 16384");
    }

    @Test
    void sourceKeyWithBracesIsRejected() {
        String business = kit.business("braces");
        assertThatThrownBy(() -> kit.startRelay(declared(business, "source-key", "orders{1}")))
                .hasStackTraceContaining("relay.businesses." + business
                        + ".source-key=orders{1}: source key must not contain '{' or '}'");
    }

    @Test
    void nonNumericValueIsNamed() {
        String business = kit.business("nonnum");
        assertThatThrownBy(() -> kit.startRelay(declared(business, "batch-size", "lots")))
                .hasStackTraceContaining("relay.businesses." + business + ".batch-size=lots");
    }

    @Test
    void everyProblemIsReportedAtOnce() {
        String business = kit.business("many");
        assertThatThrownBy(() -> kit.startRelay(
                        declared(business, "threads", 0, "batch-size", 5000, "exchange-type", "fanfare")))
                .hasStackTraceContaining(".threads=0")
                .hasStackTraceContaining(".batch-size=5000")
                .hasStackTraceContaining(".exchange-type=fanfare: must be one of");
    }

    @Test
    void exchangeMissingOnTheBrokerIsNamed() {
        String business = kit.business("gone");
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, "no.such.exchange." + business, "rk");
        assertThatThrownBy(() -> kit.startRelay(props))
                .hasStackTraceContaining("relay.businesses." + business + ".exchange=no.such.exchange." + business
                        + ": no such exchange on the broker");
    }

    /** Issue 15: a missing exchange was an IllegalStateException, so the failure analyzer never formatted it. */
    @Test
    void exchangeMissingOnTheBrokerIsATypedProblemTheFailureAnalyzerReports() {
        String business = kit.business("gone");
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, "no.such.exchange." + business, "rk");
        Throwable failure = catchThrowable(() -> kit.startRelay(props));

        FailureAnalysis analysis = new RelayFailureAnalyzer().analyze(failure);

        assertThat(analysis).as("formatted by the relay's failure analyzer").isNotNull();
        assertThat(analysis.getDescription())
                .isEqualTo("Invalid delay-relay configuration:\n  - relay.businesses."
                        + business + ".exchange=no.such.exchange." + business
                        + ": no such exchange on the broker (declare it, or set declare-exchange: true)");
        RelayConfigurationException typed = (RelayConfigurationException) analysis.getCause();
        assertThat(typed.problems()).singleElement().satisfies(problem -> {
            assertThat(problem.business()).isEqualTo(business);
            assertThat(problem.property()).isEqualTo("relay.businesses." + business + ".exchange");
            assertThat(problem.value()).isEqualTo("no.such.exchange." + business);
        });
    }

    @Test
    void tooFewIntakeDictionarySamplesAreNamedWithTheirValue() {
        Map<String, Object> props = declared(kit.business("dictsamples"));
        props.put("relay.intake-dictionary-samples", 5);
        Throwable failure = catchThrowable(() -> kit.startRelay(props));

        assertThat(new RelayFailureAnalyzer().analyze(failure).getDescription())
                .isEqualTo("Invalid delay-relay configuration:\n  - relay.intake-dictionary-samples=5: must be 20 or"
                        + " more (zstd trains no dictionary from fewer)");
    }

    @Test
    void negativeTopologyVersionIsATypedProblemNamingPropertyAndValue() {
        Map<String, Object> props = declared(kit.business("topology"));
        props.put("relay.topology-version", -1);
        Throwable failure = catchThrowable(() -> kit.startRelay(props));

        FailureAnalysis analysis = new RelayFailureAnalyzer().analyze(failure);

        assertThat(analysis).as("formatted by the relay's failure analyzer").isNotNull();
        assertThat(analysis.getDescription())
                .isEqualTo("Invalid delay-relay configuration:\n  - relay.topology-version=-1: must be 0 or more");
        RelayConfigurationException typed = (RelayConfigurationException) analysis.getCause();
        assertThat(typed.problems()).singleElement().satisfies(problem -> {
            assertThat(problem.business()).isEmpty();
            assertThat(problem.property()).isEqualTo("relay.topology-version");
            assertThat(problem.value()).isEqualTo("-1");
        });
    }

    static class SameNameTrigger extends AbstractDelayedMsgScanTrigger {
        @Override
        public String getBusiness() {
            return "twice";
        }

        @Override
        public String getExchange() {
            return "x";
        }

        @Override
        public String getRoutingKey() {
            return "rk";
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoTriggersSameName {
        @Bean
        SameNameTrigger first() {
            return new SameNameTrigger();
        }

        @Bean
        SameNameTrigger second() {
            return new SameNameTrigger() {};
        }
    }

    @Test
    void duplicateBusinessNamesAreRejected() {
        assertThatThrownBy(() -> kit.startRelay(kit.baseProperties(), TwoTriggersSameName.class))
                .hasStackTraceContaining("business 'twice': declared by two trigger beans");
    }

    @Test
    void twoBusinessesOnOneSourceKeyAreRejected() {
        String a = kit.business("samekey-a");
        String b = kit.business("samekey-b");
        Map<String, Object> props = declared(a, "source-key", "shared:key");
        RelayTestKit.business(props, b, kit.exchange("valid"), "rk", "source-key", "shared:key");
        assertThatThrownBy(() -> kit.startRelay(props))
                .hasStackTraceContaining(
                        "relay.businesses." + b + ".source-key=shared:key: already used by business '" + a + "'");
    }

    @Test
    void invalidBusinessNameIsRejected() {
        Map<String, Object> props = kit.baseProperties();
        props.put("relay.businesses[Order_Cancel].exchange", "x");
        props.put("relay.businesses[Order_Cancel].routing-key", "rk");
        assertThatThrownBy(() -> kit.startRelay(props))
                .hasStackTraceContaining("business name 'Order_Cancel': use lowercase letters, digits and '-'");
    }
}
