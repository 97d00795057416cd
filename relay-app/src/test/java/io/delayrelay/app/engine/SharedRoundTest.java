package io.delayrelay.app.engine;

import java.time.Duration;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Chores shared by relay instances (the lease reaper's pass, the safety sweep with keyspace notifications) are
 * claimed per round: one claimant per round and business, so their Redis cost does not grow with instances.
 */
class SharedRoundTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void oneInstanceClaimsEachRoundAndTheNextRoundOpensWhenThePeriodEnds() {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(kit.business("round"));
        SeatStore instanceA = new SeatStore(kit.redisFactory());
        SeatStore instanceB = new SeatStore(kit.redisFactory());

        assertThat(instanceA.claimRound(keys, "reap", 2_000)).isTrue();
        assertThat(instanceB.claimRound(keys, "reap", 2_000))
                .as("same round, other instance")
                .isFalse();
        assertThat(instanceA.claimRound(keys, "reap", 2_000))
                .as("same round, same instance")
                .isFalse();
        assertThat(instanceB.claimRound(keys, "sweep:0", 2_000))
                .as("another chore has its own rounds")
                .isTrue();

        await().atMost(Duration.ofSeconds(10)).until(() -> instanceB.claimRound(keys, "reap", 2_000));
        assertThat(instanceA.claimRound(keys, "reap", 2_000))
                .as("the new round is B's")
                .isFalse();
    }
}
