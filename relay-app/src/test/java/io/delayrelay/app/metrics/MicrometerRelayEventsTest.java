package io.delayrelay.app.metrics;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.DeadReason;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class MicrometerRelayEventsTest {

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerRelayEvents events = new MicrometerRelayEvents(registry);

    @Test
    void unregisteringABusinessRemovesEveryOneOfItsMeters() {
        BusinessSpec orders = spec("orders");
        BusinessSpec reviews = spec("reviews");
        events.register(orders);
        events.register(reviews);
        events.relayed(orders, 0, List.of(message(1_000)), 1_250);
        events.deadLettered(orders, 0, DeadReason.UNROUTABLE, 1);
        events.publishFailed(orders, 0, PublishOutcome.Cause.CONFIRM_TIMEOUT, 2);

        events.unregister("orders");

        assertThat(registry.getMeters())
                .allSatisfy(m -> assertThat(m.getId().getTag("business")).isEqualTo("reviews"));
        assertThat(registry.find(RelayMeterNames.BACKLOG)
                        .tag("business", "reviews")
                        .gauges())
                .as("due, scheduled, inflight, dead, cold")
                .hasSize(5);
        assertThat(events.registered()).containsExactly("reviews");
    }

    @Test
    void recordsLagAsConfirmTimeMinusDueTimeAndTagsTypedReasons() {
        BusinessSpec orders = spec("orders");
        events.register(orders);
        events.relayed(orders, 3, List.of(message(1_000), message(1_900)), 2_000);
        events.deadLettered(orders, 0, DeadReason.MAX_ATTEMPTS, 1);
        events.deadLettered(orders, 0, DeadReason.LEASE_EXPIRED, 2);
        events.publishFailed(orders, 0, PublishOutcome.Cause.EXCHANGE_NOT_FOUND, 3);
        events.leaseExpired(orders, 0, 4);
        events.error(orders, 0, new IllegalStateException("boom"));

        assertThat(registry.get(RelayMeterNames.RELAYED).counter().count()).isEqualTo(2.0);
        assertThat(registry.get(RelayMeterNames.LAG).timer().totalTime(TimeUnit.MILLISECONDS))
                .isEqualTo(1_100.0);
        assertThat(registry.get(RelayMeterNames.DEAD_LETTERED)
                        .tag("reason", "max-attempts")
                        .counter()
                        .count())
                .isEqualTo(1.0);
        assertThat(registry.get(RelayMeterNames.DEAD_LETTERED)
                        .tag("reason", "lease-expired")
                        .counter()
                        .count())
                .isEqualTo(2.0);
        assertThat(registry.get(RelayMeterNames.PUBLISH_FAILURES)
                        .tag("cause", "exchange-not-found")
                        .counter()
                        .count())
                .isEqualTo(3.0);
        assertThat(registry.get(RelayMeterNames.REDELIVERIES).counter().count()).isEqualTo(4.0);
        assertThat(registry.get(RelayMeterNames.ERRORS).counter().count()).isEqualTo(1.0);
    }

    @Test
    void countsOnTimeMessagesAgainstSloOnTimeWhichTheLagHistogramHasABucketFor() {
        BusinessSpec orders = spec("orders");
        events.register(orders);
        // default slo.on-time 1 s: lags of 1,000 ms and 100 ms are on time, 1,001 ms is not
        events.relayed(orders, 0, List.of(message(1_000), message(1_900), message(999)), 2_000);

        assertThat(registry.get(RelayMeterNames.ON_TIME).counter().count()).isEqualTo(2.0);
        assertThat(registry.get(RelayMeterNames.SLO_TARGET).gauge().value()).isEqualTo(0.999);
        assertThat(registry.get(RelayMeterNames.SLO_ON_TIME).gauge().value()).isEqualTo(1.0);
        assertThat(registry.get(RelayMeterNames.EARLY).counter().count()).isZero();

        // a reloaded slo.on-time of 300 ms: the histogram gets a bucket there (a new timer), the counter follows
        events.register(orders.toBuilder().slo(Duration.ofMillis(300), 0.99).build());
        events.relayed(orders, 0, List.of(message(1_000), message(1_800)), 2_000);

        assertThat(registry.get(RelayMeterNames.ON_TIME).counter().count()).isEqualTo(3.0);
        assertThat(registry.get(RelayMeterNames.SLO_TARGET).gauge().value()).isEqualTo(0.99);
        assertThat(registry.get(RelayMeterNames.LAG).timer().takeSnapshot().histogramCounts())
                .anySatisfy(b -> assertThat(b.bucket(TimeUnit.MILLISECONDS)).isEqualTo(300.0));
        assertThat(registry.get(RelayMeterNames.LAG).timers()).hasSize(1);
    }

    @Test
    void countsEarlyPublishesAndFollowsTheRateAllowanceOfACappedBusiness() {
        BusinessSpec orders = spec("orders");
        events.register(orders);
        assertThat(registry.get(RelayMeterNames.MAX_RATE).gauge().value()).isZero();
        assertThat(registry.get(RelayMeterNames.RATE_ALLOWANCE).gauge().value()).isNaN();

        BusinessSpec capped = orders.toBuilder().maxRate(2_000).build();
        events.register(capped);
        events.rateCharged(capped, 40, 160);
        events.publishedEarly(capped, 0, 2);

        assertThat(registry.get(RelayMeterNames.MAX_RATE).gauge().value()).isEqualTo(2_000.0);
        assertThat(registry.get(RelayMeterNames.RATE_ALLOWANCE).gauge().value()).isEqualTo(160.0);
        assertThat(registry.get(RelayMeterNames.EARLY).counter().count()).isEqualTo(2.0);
    }

    private static DueMessage message(long dueAtMs) {
        return new DueMessage("orders", 0, new byte[] {1}, new byte[] {1}, false, dueAtMs, dueAtMs, 1, "id");
    }

    private static BusinessSpec spec(String name) {
        return BusinessSpec.builder(name, DelayQueueKeys.forBusiness(name))
                .exchange("ex", "direct", false)
                .routingKey("rk")
                .batchSize(100)
                .maxAttempts(5)
                .retryDelay(Duration.ofSeconds(1), Duration.ofMinutes(1))
                .publishTimeout(Duration.ofSeconds(5))
                .deadBounds(10_000, Duration.ofDays(7))
                .outgoing(null)
                .build();
    }
}
