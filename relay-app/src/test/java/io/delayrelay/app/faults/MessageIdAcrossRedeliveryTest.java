package io.delayrelay.app.faults;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.Deliveries.Inbox;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * DESIGN: "message id stable across redeliveries, so consumers can deduplicate". A confirm timeout makes the relay
 * publish an entry again; both copies must carry the same AMQP message id (the id derives from the entry's original
 * due time, which the relay keeps in {@code {K:i}:attempts} across retries and crashes).
 */
@Tag("faults")
class MessageIdAcrossRedeliveryTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void duplicatesCausedByAConfirmTimeoutCarryTheSameMessageId() throws Exception {
        String business = kit.business("msgid");
        String exchange = kit.exchange("msgid");
        Inbox received = new Inbox(kit.consume(kit.queue(exchange, "due")));
        kit.startRelay(RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "threads",
                2,
                "batch-size",
                100,
                "publish-timeout",
                "2ms",
                "retry-delay",
                "50ms",
                "retry-delay-max",
                "200ms",
                "max-attempts",
                1000));
        List<String> sent = new ArrayList<>();
        // all due at one instant after the writes: the relay then pops and publishes them in batches of 100, whose
        // confirms take longer than the 2 ms publish timeout even on a quiet broker (written due at once, one by one,
        // they were popped a few at a time and a quiet broker confirmed every one within 2 ms: no retry to look at)
        Instant dueAt = Instant.now().plusSeconds(3);
        for (int i = 0; i < 500; i++) {
            kit.producer().schedule(business, "id-" + i, dueAt);
            sent.add("id-" + i);
        }
        Deliveries.Report report =
                Deliveries.expect(sent).quiet(Duration.ofSeconds(1)).await(received, Duration.ofSeconds(60));
        List<Received> all = report.all();
        // Every copy beyond the first is a retry after a confirm timeout (a later attempt); none lost, none early.
        long retries =
                all.stream().filter(r -> r.header(RelayHeaders.ATTEMPT) > 1).count();
        Deliveries.expect(sent)
                .duplicatesAtMost((int) retries, "deliveries of attempts > 1 (each a retry after a confirm timeout)")
                .measure(all)
                .assertClean();

        Map<String, Set<String>> idsByBody = new HashMap<>();
        all.forEach(
                r -> idsByBody.computeIfAbsent(r.text(), b -> new TreeSet<>()).add(r.messageId()));
        long duplicated = idsByBody.keySet().stream()
                .filter(b -> all.stream().filter(r -> r.text().equals(b)).count() > 1)
                .count();
        System.out.println("bodies delivered more than once: " + duplicated);
        assertThat(duplicated).as("the confirm timeout produced duplicates").isPositive();
        assertThat(idsByBody)
                .allSatisfy((body, ids) ->
                        assertThat(ids).as("message ids of %s", body).hasSize(1));
    }
}
