package io.delayrelay.app.support;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The delivery check fails for each thing it claims to catch: a check that cannot fail would prove nothing. */
class DeliveriesTest {

    private static final long DUE = 1_800_000_000_000L;

    private static Received received(String body, long dueAt, long relayedAt) {
        return new Received(
                body.getBytes(StandardCharsets.UTF_8),
                Map.of(RelayHeaders.DUE_AT, dueAt, RelayHeaders.RELAYED_AT, relayedAt),
                "id-" + body,
                relayedAt + 1);
    }

    @Test
    void passesWhenEachBodyArrivedOnceOnTime() {
        Deliveries.Report report =
                Deliveries.expect("a", "b").measure(List.of(received("a", DUE, DUE), received("b", DUE, DUE + 5)));

        report.assertClean();
        assertThat(report.toString())
                .isEqualTo("sent=2 delivered=2 duplicates=0 lost=0 early=0 unexpected=0 maxLagMs=6 maxLeadMs=0");
    }

    @Test
    void failsOnALostBodyNamingIt() {
        Deliveries.Report report = Deliveries.expect("a", "b").measure(List.of(received("a", DUE, DUE)));

        assertThatThrownBy(report::assertClean)
                .hasMessageContaining("lost: 1 of 2")
                .hasMessageContaining("[b]");
    }

    @Test
    void failsOnADuplicateBeyondTheStatedBoundAndNamesTheBound() {
        List<Received> three = List.of(received("a", DUE, DUE), received("a", DUE, DUE), received("a", DUE, DUE));

        Deliveries.expect("a")
                .duplicatesAtMost(2, "window 1 x 2 kills")
                .measure(three)
                .assertClean();
        assertThatThrownBy(() -> Deliveries.expect("a")
                        .duplicatesAtMost(1, "window 1 x 1 kill")
                        .measure(three)
                        .assertClean())
                .hasMessageContaining("window 1 x 1 kill = 1");
        assertThatThrownBy(() -> Deliveries.expect("a").measure(three).assertClean())
                .hasMessageContaining("exactly once");
    }

    @Test
    void failsOnARelayedAtBeforeDueBeyondTheEstimateTolerance() {
        long lead = Deliveries.RELAYED_AT_TOLERANCE_MS + 1;
        Deliveries.Report early =
                Deliveries.expect("a").redisOnAnotherHost().measure(List.of(received("a", DUE, DUE - lead)));
        assertThat(early.maxLeadMs()).isEqualTo(lead);
        assertThatThrownBy(early::assertClean).hasMessageContaining("early: 1");

        // the header alone (a Redis on another host): within the estimate's tolerance passes
        Deliveries.expect("a")
                .redisOnAnotherHost()
                .measure(List.of(received("a", DUE, DUE - Deliveries.RELAYED_AT_TOLERANCE_MS)))
                .assertClean();
    }

    @Test
    void failsOnAnArrivalBeforeDueOnOneHostClockButNotForARemoteRedis() {
        Received arrivedEarly = new Received(
                "a".getBytes(StandardCharsets.UTF_8),
                Map.of(RelayHeaders.DUE_AT, DUE, RelayHeaders.RELAYED_AT, DUE),
                "id-a",
                DUE - 1);

        assertThatThrownBy(() ->
                        Deliveries.expect("a").measure(List.of(arrivedEarly)).assertClean())
                .hasMessageContaining("arrived at " + (DUE - 1));
        Deliveries.expect("a")
                .redisOnAnotherHost()
                .measure(List.of(arrivedEarly))
                .assertClean();
    }

    @Test
    void failsWhenRelayedBeforeTheScheduledDueEvenIfTheHeaderSaysOtherwise() {
        Deliveries.Report report =
                Deliveries.expect("a").scheduledDue(Map.of("a", DUE + 1_000)).measure(List.of(received("a", DUE, DUE)));

        assertThatThrownBy(report::assertClean).hasMessageContaining("< due " + (DUE + 1_000));
    }

    @Test
    void failsOnABodyNeverSentUnlessItMayAlsoArrive() {
        List<Received> withExtra = List.of(received("a", DUE, DUE), received("x", DUE, DUE));

        assertThatThrownBy(() -> Deliveries.expect("a").measure(withExtra).assertClean())
                .hasMessageContaining("unexpected: 1");
        Deliveries.expect("a").mayAlsoArrive(List.of("x")).measure(withExtra).assertClean();
    }

    @Test
    void aLateCopyWithinTheQuietPeriodIsSeen() throws Exception {
        BlockingQueue<Received> queue = new LinkedBlockingQueue<>();
        queue.add(received("a", DUE, DUE));
        Thread late = new Thread(() -> {
            try {
                Thread.sleep(200);
                queue.add(received("a", DUE, DUE));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        late.start();

        Deliveries.Report report = Deliveries.expect("a")
                .quiet(Duration.ofSeconds(1))
                .await(new Deliveries.Inbox(queue), Duration.ofSeconds(5));
        late.join();

        assertThat(report.duplicates()).isEqualTo(1);
        assertThatThrownBy(report::assertClean).hasMessageContaining("duplicates");
    }
}
