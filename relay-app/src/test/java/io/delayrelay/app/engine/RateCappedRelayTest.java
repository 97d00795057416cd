package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A rate-capped business's workers on the real Redis: a backlog spread over every shard drains at max-rate, earliest
 * due first across the shards (within about a round of chunks), each entry once; what pops did not use goes back.
 */
class RateCappedRelayTest {

    private static final int ENTRIES = 3_000;
    private static final int SHARDS = 16;
    private static final int RATE = 1_000;

    private final EngineFixture f = new EngineFixture();

    @AfterEach
    void cleanUp() {
        f.close();
    }

    @Test
    void aBacklogOnEveryShardDrainsAtTheCapEarliestDueFirst() {
        BusinessSpec spec = f
                .spec("capped")
                .shards(SHARDS)
                .threads(2)
                .batchSize(500)
                // sweeps (which mark every shard due, drained ones too) as rare as with keyspace notifications
                .maxIdle(Duration.ofSeconds(2))
                .build()
                .toBuilder()
                .maxRate(RATE)
                .build();
        long now = f.kit.redisNowMs();
        // every entry already due, 1 ms apart, dealt over the shards: entry i is the i-th earliest
        for (int i = 0; i < ENTRIES; i++) {
            f.zadd(spec, i % SHARDS, "e-" + i, now - ENTRIES + i);
        }
        EngineFixture.ConfirmingPublisher publisher = new EngineFixture.ConfirmingPublisher();
        f.start(spec, publisher, RelayEvents.NOOP);

        await().atMost(Duration.ofSeconds(30)).until(() -> publisher.published.size() >= ENTRIES);

        List<DueMessage> published = new ArrayList<>(publisher.published);
        assertThat(published).hasSize(ENTRIES);
        assertThat(published.stream().map(DueMessage::bodyAsString).distinct()).hasSize(ENTRIES);
        long firstPop =
                published.stream().mapToLong(DueMessage::poppedAtMs).min().orElseThrow();
        long lastPop =
                published.stream().mapToLong(DueMessage::poppedAtMs).max().orElseThrow();
        // the burst (100) goes at once, the rest at 1,000/s: 2.9 s at least between the first and the last pop
        double seconds = (lastPop - firstPop) / 1000.0;
        double rate = (ENTRIES - RateGovernor.burst(spec)) / seconds;

        // earliest first: how far an entry's place in publish order is from its place in due order
        List<DueMessage> byPop = new ArrayList<>(published);
        byPop.sort(Comparator.comparingLong(DueMessage::poppedAtMs));
        Map<String, Integer> place = new HashMap<>();
        for (int i = 0; i < byPop.size(); i++) {
            place.put(byPop.get(i).bodyAsString(), i);
        }
        int displaced = 0;
        for (int i = 0; i < ENTRIES; i++) {
            displaced = Math.max(displaced, Math.abs(place.get("e-" + i) - i));
        }
        System.out.printf(
                "FIGURE capped engine: %d entries on %d shards, max-rate %d: %.0f/s after the burst (%.2f s), most"
                        + " displaced from due order by %d places (a chunk is %d); %d charges granted %d, %d gave back"
                        + " %d unused%n",
                ENTRIES,
                SHARDS,
                RATE,
                rate,
                seconds,
                displaced,
                RateGovernor.chunk(spec),
                f.rateCharges.get(),
                f.granted.get(),
                f.giveBacks.get(),
                f.givenBack.get());
        assertThat(rate).isBetween(RATE * 0.9, RATE * 1.1);
        // a round of chunks over the shards, twice (two workers, pops interleaved): far below a drained shard (187)
        // times the shards, which is what uncapped workers draining shard after shard may reorder
        assertThat(displaced).isLessThanOrEqualTo(2 * SHARDS * (int) RateGovernor.chunk(spec));
        // a worker may hold a chunk it took for a pop still under way (the backlog is gone, so it gives it back): the
        // balance settles at the entries popped, a leak would stay above
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(f.granted.get() - f.givenBack.get())
                .as("tokens used are the entries popped")
                .isEqualTo(ENTRIES));
    }

    @Test
    void aReloadedCapAppliesAtOnceBothWays() {
        BusinessSpec uncapped = f.spec("reload")
                .shards(4)
                .threads(2)
                .batchSize(500)
                .maxIdle(Duration.ofSeconds(2))
                .build();
        BusinessSpec slow = uncapped.toBuilder().maxRate(20).build();
        long now = f.kit.redisNowMs();
        for (int i = 0; i < 400; i++) {
            f.zadd(slow, i % 4, "r-" + i, now - 1_000 + i);
        }
        EngineFixture.ConfirmingPublisher publisher = new EngineFixture.ConfirmingPublisher();
        BusinessRelay relay = f.start(slow, publisher, RelayEvents.NOOP);

        // 20/s: a burst of 2, then one every 50 ms
        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published.size() >= 10);
        long start = System.nanoTime();
        int atStart = publisher.published.size();
        await().pollDelay(Duration.ofSeconds(1)).until(() -> true);
        double capped = (publisher.published.size() - atStart) / ((System.nanoTime() - start) / 1e9);
        assertThat(capped).as("capped at 20/s").isBetween(10.0, 30.0);

        relay.update(uncapped, 0);
        long reloaded = System.nanoTime();
        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published.size() >= 400);
        double secondsToDrain = (System.nanoTime() - reloaded) / 1e9;
        System.out.printf(
                "FIGURE capped reload: %.1f/s under max-rate 20, the rest (%d) drained %.2f s after the cap was removed%n",
                capped, 400 - atStart, secondsToDrain);
        // the ~380 left would take 19 s at 20/s
        assertThat(secondsToDrain).isLessThan(5);
        assertThat(publisher.bodies()).doesNotHaveDuplicates().hasSize(400);
    }
}
