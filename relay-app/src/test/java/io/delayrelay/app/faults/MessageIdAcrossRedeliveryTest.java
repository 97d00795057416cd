package io.delayrelay.app.faults;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import io.delayrelay.app.faults.FaultFigures.Collector;
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
        Collector received = new Collector(kit.consume(kit.queue(exchange, "due")));
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
        for (int i = 0; i < 500; i++) {
            kit.producer().scheduleAfter(business, "id-" + i, Duration.ZERO);
        }
        received.awaitDistinct(500, 60_000, 1_000);

        Map<String, Set<String>> idsByBody = new HashMap<>();
        List<Received> all = received.drain();
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
