package io.delayrelay.app.config;

import java.time.Duration;
import java.util.List;

import io.delayrelay.app.engine.cold.ColdTiming;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import org.junit.jupiter.api.Test;
import org.springframework.mock.env.MockEnvironment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

/**
 * {@code cold-after} (docs/cold-tier.md): off unless set, from {@code relay.defaults.} or the business, 0 = off, at
 * least 10 s, a bad value named with business, property and value; and the timing the mover derives from it.
 */
class ColdAfterSettingTest {

    private final MockEnvironment env = new MockEnvironment();

    private void business(String name) {
        env.setProperty("relay.businesses." + name + ".exchange", name + ".ex");
        env.setProperty("relay.businesses." + name + ".routing-key", name + ".rk");
    }

    @Test
    void offUnlessSetAndFromTheDefaultsOrTheBusiness() {
        business("plain");
        assertThat(BusinessSpecResolver.resolve(env, List.of()))
                .extracting(BusinessSpec::name, BusinessSpec::coldAfter, BusinessSpec::cold)
                .containsExactly(tuple("plain", null, false));

        env.setProperty("relay.defaults.cold-after", "1d");
        business("review");
        env.setProperty("relay.businesses.review.cold-after", "7d");
        business("off");
        env.setProperty("relay.businesses.off.cold-after", "0");

        assertThat(BusinessSpecResolver.resolve(env, List.of()))
                .extracting(BusinessSpec::name, BusinessSpec::coldAfter)
                .containsExactlyInAnyOrder(
                        tuple("plain", Duration.ofDays(1)), tuple("review", Duration.ofDays(7)), tuple("off", null));
    }

    @Test
    void lessThanTenSecondsIsRefusedNamingBusinessPropertyAndValue() {
        business("b");
        env.setProperty("relay.businesses.b.cold-after", "5s");
        assertThat(BusinessSpecResolver.resolveAll(env, List.of()).allProblems())
                .extracting(ConfigProblem::message)
                .containsExactly(
                        "relay.businesses.b.cold-after=PT5S: must be at least PT10S (or 0 / unset: no cold tier)");
    }

    @Test
    void theTimingKeepsAPromotedEntryHotAndPromotesManyPeriodsAhead() {
        ColdTiming twenty = ColdTiming.of(Duration.ofSeconds(20));
        assertThat(twenty).isEqualTo(new ColdTiming(20_000, 5_000, 10_000, 1_000));
        ColdTiming week = ColdTiming.of(Duration.ofDays(7));
        assertThat(week).isEqualTo(new ColdTiming(604_800_000, 21_600_000, 302_400_000, 1_000));
        for (ColdTiming t : List.of(twenty, week, ColdTiming.of(Duration.ofSeconds(10)))) {
            assertThat(t.leadMs() + t.bucketMs()).as("never demoted again").isLessThan(t.coldAfterMs());
            assertThat(t.leadMs()).as("many periods of promotion ahead").isGreaterThanOrEqualTo(10 * t.periodMs());
        }
    }
}
