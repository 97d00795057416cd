package io.delayrelay.app.daemon;

import java.time.Duration;
import java.util.Map;
import java.util.regex.Pattern;

import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 24 (O3, O4): the exec jar as an operator runs it. A misspelt relay.* key and wrong RabbitMQ credentials
 * each end the process with one report (Spring Boot's failure analysis), naming the key and its closest valid name,
 * or the server, user and what to check; no "delay-relay started".
 */
class StartupFailuresIT {

    @Test
    void aMisspeltKeyEndsTheProcessWithOneReportNamingTheClosestValidKey() throws Exception {
        try (RelayProcess relay = RelayProcess.start(
                "unknown-key",
                Map.of(
                        "relay.businesses.orders.exchange", "amq.direct",
                        "relay.businesses.orders.routing-key", "rk",
                        "relay.businesses.orders.max-atempts", "5s"),
                false,
                RelayProcess.C1)) {
            Integer exit = relay.awaitExit(Duration.ofSeconds(150));
            String output = relay.output();
            assertThat(exit).as("exit code; output:\n%s", output).isNotNull().isNotZero();
            // the report; Spring's context also logs the exception's message in its WARN before it
            String report =
                    "Description:\n\nInvalid delay-relay configuration:\n  - relay.businesses.orders.max-atempts"
                            + " is unknown (no relay setting reads it); did you mean relay.businesses.orders.max-attempts?\n\n";
            assertThat(output.split(Pattern.quote(report), -1).length - 1)
                    .as(output)
                    .isEqualTo(1);
            assertThat(output).contains("Invalid delay-relay configuration:").doesNotContain("delay-relay started");
        }
    }

    @Test
    void anUnknownMessageShapeEndsTheProcessWithOneReportNamingBusinessPropertyAndValue() throws Exception {
        try (RelayProcess relay = RelayProcess.start(
                "bad-shape",
                Map.of(
                        "relay.businesses.clicks.exchange", "amq.direct",
                        "relay.businesses.clicks.routing-key", "rk",
                        "relay.businesses.clicks.message-shape", "slim"),
                false,
                RelayProcess.C1)) {
            Integer exit = relay.awaitExit(Duration.ofSeconds(150));
            String output = relay.output();
            assertThat(exit).as("exit code; output:\n%s", output).isNotNull().isNotZero();
            String report = "Description:\n\nInvalid delay-relay configuration:\n"
                    + "  - relay.businesses.clicks.message-shape=slim: must be one of [full, lean]\n\n";
            assertThat(output.split(Pattern.quote(report), -1).length - 1)
                    .as(output)
                    .isEqualTo(1);
            assertThat(output).doesNotContain("delay-relay started");
        }
    }

    @Test
    void wrongRabbitCredentialsEndTheProcessWithOneReportNamingServerAndUser() throws Exception {
        try (RelayProcess relay = RelayProcess.start(
                "rabbit-auth",
                Map.of(
                        "RELAY_RABBIT_HOST", TestServices.rabbit().host(),
                        "RELAY_RABBIT_PORT", TestServices.rabbit().port(),
                        "RELAY_REDIS_HOST", TestServices.redis().host(),
                        "RELAY_REDIS_PORT", TestServices.redis().port(),
                        "spring.rabbitmq.password", "not-the-password",
                        "relay.businesses.orders.exchange", "amq.direct",
                        "relay.businesses.orders.routing-key", "rk"),
                false,
                RelayProcess.C1)) {
            Integer exit = relay.awaitExit(Duration.ofSeconds(150));
            String output = relay.output();
            assertThat(exit).as("exit code; output:\n%s", output).isNotNull().isNotZero();
            String start = "RabbitMQ at " + TestServices.rabbit().host() + ":"
                    + TestServices.rabbit().port() + " (vhost '/') as user 'guest' refused the relay: ";
            assertThat(output.lines()
                            .filter(l -> l.startsWith(start) && l.contains("ACCESS_REFUSED"))
                            .count())
                    .as(output)
                    .isEqualTo(1);
            assertThat(output)
                    .contains("Check spring.rabbitmq.username and spring.rabbitmq.password")
                    .doesNotContain("not-the-password")
                    .doesNotContain("delay-relay started");
        }
    }
}
