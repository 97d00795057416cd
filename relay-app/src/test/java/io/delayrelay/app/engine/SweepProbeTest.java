package io.delayrelay.app.engine;

import java.time.Duration;

import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A sweep (every max-idle when polling) first asks Redis with one multi-key EXISTS whether any of the instance's
 * shards holds anything: an idle business costs one command per interval and no pop, and an entry nothing announced
 * is still found within one interval.
 */
@Tag("timing")
class SweepProbeTest {

    private final EngineFixture fx = new EngineFixture();

    @AfterEach
    void cleanUp() {
        fx.close();
    }

    @Test
    void anIdleBusinessIsProbedWithoutPopsAndAnUnannouncedEntryIsFoundWithinMaxIdle() {
        BusinessSpec spec =
                fx.spec("sweep-probe").shards(8).maxIdle(Duration.ofMillis(50)).build();
        EngineFixture.ConfirmingPublisher publisher = new EngineFixture.ConfirmingPublisher();
        fx.start(spec, publisher, new EngineFixture.CountingEvents());
        // the start's own sweep pops every shard once (before any probe): let it pass, then count
        await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ofMillis(300)).until(() -> true);
        int popsBefore = fx.store.pops.get();
        await().pollDelay(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> true);
        assertThat(fx.store.pops.get())
                .as("10 sweeps of 8 empty shards in 500 ms: no pop")
                .isEqualTo(popsBefore);

        long due = fx.kit.redisNowMs();
        fx.zadd(spec, 5, "unannounced", due);
        await().atMost(Duration.ofSeconds(2)).until(() -> publisher.published.size() == 1);
        assertThat(publisher.published.get(0).poppedAtMs())
                .as("found by the next sweep: within max-idle (margin for a loaded box)")
                .isLessThan(due + 1_000);
        assertThat(fx.store.pops.get()).isGreaterThan(popsBefore);
    }
}
