package io.delayrelay.app.trigger;

import java.time.Duration;

import io.delayrelay.api.DelayQueueKeys;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BusinessSpecBuilderTest {

    private final BusinessSpecBuilder orders = BusinessSpec.builder("orders", DelayQueueKeys.forBusiness("orders"));

    @Test
    void buildRejectsEveryValueOutOfRangeNamingBusinessPropertyAndValue() {
        assertThatThrownBy(() -> orders.shards(0)
                        .linger(Duration.ofSeconds(2))
                        .slo(Duration.ofSeconds(1), 1.5)
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("relay.businesses.orders.shards=0: must be between 1 and 16384; "
                        + "relay.businesses.orders.linger=PT2S: must be between 0 and PT1S (0: pop each shard as soon"
                        + " as it is due); "
                        + "relay.businesses.orders.slo.target=1.5: must be a ratio between 0 and 1 (exclusive), e.g."
                        + " 0.999");
    }

    @Test
    void theDefaultsAreValidAndToBuilderKeepsEverySetting() {
        BusinessSpec spec = orders.exchange("ex", "topic", true)
                .routingKey("rk")
                .batchBytes(2048)
                .lead(Duration.ofMillis(50))
                .retryDelay(Duration.ofSeconds(2), Duration.ofMinutes(1))
                .deadBounds(5, Duration.ofDays(1))
                .latePolicy(Duration.ofSeconds(3), true)
                .maxRate(100)
                .coldAfter(Duration.ofMinutes(1))
                .build();

        assertThat(spec.validate()).isEmpty();
        assertThat(spec.toBuilder().build()).isEqualTo(spec);
        assertThat(spec.route()).isEqualTo(new BusinessSpec.Route("ex", "rk", "topic", true));
        assertThat(spec.late()).isEqualTo(new BusinessSpec.LatePolicy(Duration.ofSeconds(3), true));
        assertThat(spec.popsAhead()).isTrue();
        assertThat(spec.round()).isEqualTo(Duration.ofMillis(50));
        assertThat(spec.toBuilder().maxRate(BusinessSpec.NO_MAX_RATE).build().rateCapped())
                .isFalse();
    }
}
