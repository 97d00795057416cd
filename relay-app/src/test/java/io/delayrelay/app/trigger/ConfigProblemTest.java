package io.delayrelay.app.trigger;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a configuration problem says to an operator (the start-up report, the reload log, the ops endpoint show its
 * message): the full property name, the value as configured and the reason; and the typed fields callers act on.
 */
class ConfigProblemTest {

    @Test
    void aBadPropertyNamesItsFullNameAndValue() {
        ConfigProblem problem = ConfigProblem.property("orders", "threads", 0, "must be between 1 and 256");

        assertThat(problem)
                .isEqualTo(new ConfigProblem(
                        "orders",
                        "relay.businesses.orders.threads",
                        "0",
                        "relay.businesses.orders.threads=0: must be between 1 and 256"));
        assertThat(problem).hasToString("relay.businesses.orders.threads=0: must be between 1 and 256");
        assertThat(ConfigProblem.property("orders", "lease", null, "must be a positive duration")
                        .message())
                .isEqualTo("relay.businesses.orders.lease=null: must be a positive duration");
    }

    @Test
    void aBlankRequiredValueIsShownQuoted() {
        assertThat(ConfigProblem.blank("orders", "exchange", " ", "required"))
                .isEqualTo(new ConfigProblem(
                        "orders",
                        "relay.businesses.orders.exchange",
                        " ",
                        "relay.businesses.orders.exchange=' ': required"));
        assertThat(ConfigProblem.blank("orders", "exchange", null, "required").value())
                .isEmpty();
    }

    @Test
    void aWholeBusinessOrARelayWideProblemHasNoBusinessPropertyOrValueItDoesNotConcern() {
        assertThat(ConfigProblem.business("orders", "business 'orders'", "declared twice"))
                .isEqualTo(new ConfigProblem("orders", null, null, "business 'orders': declared twice"));
        assertThat(ConfigProblem.global("relay.businesses", "cannot bind"))
                .isEqualTo(new ConfigProblem("", "relay.businesses", null, "relay.businesses: cannot bind"));
        assertThat(ConfigProblem.global("relay.console.path", "/x y", "no spaces"))
                .isEqualTo(new ConfigProblem("", "relay.console.path", "/x y", "relay.console.path=/x y: no spaces"));
        assertThat(List.of(ConfigProblem.global("relay.x", null, "missing").message()))
                .containsExactly("relay.x=null: missing");
    }
}
