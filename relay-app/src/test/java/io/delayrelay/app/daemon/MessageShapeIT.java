package io.delayrelay.app.daemon;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ScheduleOptions;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;
import static org.awaitility.Awaitility.await;

/**
 * Issue 25 (message shape), against the exec jar as a process: one relay serves a business with
 * {@code message-shape: lean} and another with the default full shape. The lean business's messages carry the
 * message id and the producer's headers ({@code x-delay-id} for entries scheduled by id) and none of the other
 * {@code x-delay-*} headers; the full business's carry all of them.
 */
class MessageShapeIT {

    private static final Duration START = Duration.ofSeconds(150);
    private static final int EACH = 20;
    private static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    private static final Set<String> FULL_HEADERS = Set.of(
            RelayHeaders.BUSINESS,
            RelayHeaders.DUE_AT,
            RelayHeaders.RELAYED_AT,
            RelayHeaders.SHARD,
            RelayHeaders.ATTEMPT);

    private final RelayTestKit kit = new RelayTestKit();
    private RelayProcess relay;

    @AfterEach
    void cleanUp() throws InterruptedException {
        if (relay != null) {
            relay.close();
        }
        kit.close();
    }

    @Test
    void aLeanBusinessDeliversTheIdWithoutTheDroppedHeadersWhileAnotherKeepsTheFullShape() throws Exception {
        String lean = kit.business("shape-lean");
        String full = kit.business("shape-full");
        String leanExchange = kit.exchange("shape-lean");
        String fullExchange = kit.exchange("shape-full");
        BlockingQueue<Received> leanInbox = kit.consume(kit.queue(leanExchange, "due"));
        BlockingQueue<Received> fullInbox = kit.consume(kit.queue(fullExchange, "due"));
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(), lean, leanExchange, "due", "shards", 4, "message-shape", "lean");
        RelayTestKit.business(props, full, fullExchange, "due", "shards", 4);
        relay = RelayProcess.start("shape", props, false, RelayProcess.C1);
        await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
            if (!relay.isAlive()) {
                throw new AssertionError("relay exited:\n" + relay.output());
            }
            return relay.started();
        });

        for (String business : List.of(lean, full)) {
            for (int i = 0; i < EACH; i++) {
                if (i % 2 == 0) {
                    kit.producer().scheduleAfter(business, "plain-" + i, Duration.ofMillis(200));
                } else {
                    kit.producer()
                            .scheduleByIdAfter(
                                    business,
                                    "order-" + i,
                                    ("by id " + i).getBytes(StandardCharsets.UTF_8),
                                    Duration.ofMillis(200),
                                    ScheduleOptions.create().header("traceparent", TRACEPARENT));
                }
            }
        }
        List<Received> leanOut = RelayTestKit.collect(leanInbox, EACH, Duration.ofSeconds(30), Duration.ofSeconds(1));
        List<Received> fullOut = RelayTestKit.collect(fullInbox, EACH, Duration.ofSeconds(30), Duration.ofSeconds(1));

        assertThat(leanOut).hasSize(EACH);
        assertThat(fullOut).hasSize(EACH);
        assertThat(leanOut)
                .as("every lean message has its own stable message id")
                .extracting(Received::messageId)
                .doesNotContainNull()
                .doesNotHaveDuplicates();
        for (Received r : leanOut) {
            if (r.text().startsWith("plain-")) {
                assertThat(r.headers())
                        .as("lean, scheduled without id: %s", r.text())
                        .isEmpty();
            } else {
                String id = "order-" + r.text().substring("by id ".length());
                assertThat(r.headers())
                        .as("lean, scheduled by id: %s", r.text())
                        .containsOnly(entry("traceparent", TRACEPARENT), entry(RelayHeaders.ID, id));
            }
        }
        assertThat(fullOut).extracting(Received::messageId).doesNotContainNull().doesNotHaveDuplicates();
        for (Received r : fullOut) {
            assertThat(r.headers()).containsKeys(FULL_HEADERS.toArray(String[]::new));
            assertThat(r.headers()).containsEntry(RelayHeaders.BUSINESS, full).containsEntry(RelayHeaders.ATTEMPT, 1);
            if (r.text().startsWith("by id ")) {
                assertThat(r.headers().keySet())
                        .containsExactlyInAnyOrder(
                                RelayHeaders.BUSINESS,
                                RelayHeaders.DUE_AT,
                                RelayHeaders.RELAYED_AT,
                                RelayHeaders.SHARD,
                                RelayHeaders.ATTEMPT,
                                RelayHeaders.ID,
                                "traceparent");
            } else {
                assertThat(r.headers().keySet()).containsExactlyInAnyOrderElementsOf(FULL_HEADERS);
            }
        }
    }
}
