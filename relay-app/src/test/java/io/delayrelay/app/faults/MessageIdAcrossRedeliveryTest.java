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
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.Deliveries.Inbox;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * DESIGN: "message id stable across redeliveries, so consumers can deduplicate". A confirm timeout makes the relay
 * publish an entry again; both copies must carry the same AMQP message id (the id derives from the entry's original
 * due time, which the relay keeps in {@code {K:i}:attempts} across retries and crashes).
 */
@Tag("faults")
class MessageIdAcrossRedeliveryTest {

    private final RelayTestKit kit = new RelayTestKit();
    private TcpProxy proxy;

    @AfterEach
    void cleanUp() throws Exception {
        try {
            if (proxy != null) {
                proxy.close();
            }
        } finally {
            kit.close();
        }
    }

    @Test
    void duplicatesCausedByAConfirmTimeoutCarryTheSameMessageId() throws Exception {
        String business = kit.business("msgid");
        String exchange = kit.exchange("msgid");
        Inbox received = new Inbox(kit.consume(kit.queue(exchange, "due")));
        // The relay reaches the broker through a proxy frozen while the batches go out: their confirms cannot come
        // within the publish-timeout, the relay publishes them again, and once the link thaws the broker has both
        // copies. (A bare 2 ms publish-timeout depended on the machine: a quiet broker confirmed every batch of 100
        // within it, and a CI run saw no duplicate at all.)
        FrozenLinkRelay relay = FrozenLinkRelay.start(kit, business, exchange);
        proxy = relay.proxy;
        List<String> sent = new ArrayList<>();
        // a first message opens the relay's connection and channel through the proxy (the relay connects lazily)
        kit.producer().schedule(business, "warm", Instant.now());
        sent.add("warm");
        await("the first message relayed").atMost(Duration.ofSeconds(30)).until(() -> relay.relayed() == 1);
        proxy.freeze();
        Instant dueAt = Instant.now();
        for (int i = 0; i < 500; i++) {
            kit.producer().schedule(business, "id-" + i, dueAt);
            sent.add("id-" + i);
        }
        await("a confirm timeout counted")
                .atMost(Duration.ofSeconds(30))
                .until(() -> relay.failures(PublishOutcome.Cause.CONFIRM_TIMEOUT) > 0);
        proxy.thaw();
        Deliveries.Report report =
                Deliveries.expect(sent).quiet(Duration.ofMillis(1_500)).await(received, Duration.ofSeconds(90));
        List<Received> all = report.all();
        // None lost, none early. Every copy beyond the first is a later attempt after a confirm timeout: the rule is
        // per body (no attempt of a message delivered twice, so a body's copies are its distinct attempts). The volume
        // of retries is not bounded (every batch published into the frozen link retries); duplicatesAtMost restates
        // the per-body rule in the figures, it is no separate bound.
        long retries =
                all.stream().filter(r -> r.header(RelayHeaders.ATTEMPT) > 1).count();
        Deliveries.expect(sent)
                .duplicatesAtMost((int) retries, "deliveries of attempts > 1 (each a retry after a confirm timeout)")
                .measure(all)
                .assertClean();
        assertThat(all.stream().map(r -> r.text() + "#" + r.header(RelayHeaders.ATTEMPT)))
                .as("no attempt of a message delivered twice")
                .doesNotHaveDuplicates();

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
