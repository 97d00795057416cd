package io.delayrelay.app.faults;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.Deliveries.Inbox;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TcpProxy;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 4: a slow or refusing broker. Nacks (a full queue with x-overflow=reject-publish) and confirm timeouts (a
 * tiny publish-timeout) lead to redelivery, never to loss.
 */
@Tag("faults")
class NacksAndConfirmTimeoutsTest {

    static final int MESSAGES = 2_000;

    private final RelayTestKit kit = new RelayTestKit();
    private String boundedQueue;
    private TcpProxy proxy;

    @AfterEach
    void cleanUp() throws Exception {
        try {
            if (proxy != null) {
                proxy.close();
            }
            if (boundedQueue != null) {
                kit.channel().queueDelete(boundedQueue);
            }
        } finally {
            kit.close();
        }
    }

    @Test
    void nacksFromAFullQueueAreRetriedUntilDeliveredAndNothingIsLost() throws Exception {
        String business = kit.business("nacks");
        String exchange = kit.exchange("nacks");
        boundedQueue = "test.faults.bounded." + business;
        kit.channel()
                .queueDeclare(
                        boundedQueue, false, false, false, Map.of("x-max-length", 100, "x-overflow", "reject-publish"));
        kit.channel().queueBind(boundedQueue, exchange, "due");
        MeterRegistry registry = kit.startRelay(RelayTestKit.business(
                        kit.baseProperties(),
                        business,
                        exchange,
                        "due",
                        "threads",
                        2,
                        "batch-size",
                        50,
                        "retry-delay",
                        "200ms",
                        "retry-delay-max",
                        "1s",
                        "max-attempts",
                        100))
                .getBean(MeterRegistry.class);
        List<String> sent = schedule(business, "nack-");

        // nobody consumes: the queue fills up at 100 and the broker nacks the rest
        await("queue full and a nack counted")
                .atMost(Duration.ofSeconds(30))
                .until(() -> kit.channel().queueDeclarePassive(boundedQueue).getMessageCount() == 100
                        && nacks(registry, business) > 0);
        Inbox received = new Inbox(kit.consume(boundedQueue));
        // A nack from x-overflow=reject-publish means the broker did not enqueue the message: no copy to duplicate.
        Deliveries.Report report =
                Deliveries.expect(sent).quiet(Duration.ofMillis(1_500)).await(received, Duration.ofSeconds(90));
        List<Received> all = report.all();
        long redelivered =
                all.stream().filter(r -> r.header(RelayHeaders.ATTEMPT) > 1).count();
        FaultFigures.of(
                "4a nacks (x-overflow=reject-publish)",
                report,
                "deliveredAfterANack=" + redelivered + " dead=" + kit.countAll(business, "dead"));
        report.assertClean();
        assertThat(redelivered).as("messages the broker nacked first").isPositive();
        assertThat(kit.countAll(business, "dead")).isZero();
        kit.awaitInflightSettled(business, Duration.ofSeconds(10));
    }

    @Test
    void confirmTimeoutsLeadToRedeliveryNotLoss() throws Exception {
        String business = kit.business("timeouts");
        String exchange = kit.exchange("timeouts");
        Inbox received = new Inbox(kit.consume(kit.queue(exchange, "due")));
        // The relay reaches the broker through a proxy frozen while the first batches go out: their confirms cannot
        // come within the publish-timeout (FrozenLinkRelay).
        FrozenLinkRelay relay = FrozenLinkRelay.start(kit, business, exchange);
        proxy = relay.proxy;
        // a first message opens the relay's connection and channel through the proxy (the relay connects lazily)
        List<String> sent = new ArrayList<>(schedule(business, "warm-", 1));
        await("the first message relayed").atMost(Duration.ofSeconds(30)).until(() -> relay.relayed() == 1);
        proxy.freeze();
        sent.addAll(schedule(business, "timeout-"));
        // the first batches are published into the frozen link: their confirms cannot come, they time out
        await("a confirm timeout counted")
                .atMost(Duration.ofSeconds(30))
                .until(() -> relay.failures(PublishOutcome.Cause.CONFIRM_TIMEOUT) > 0);
        proxy.thaw();

        // A confirm timeout cannot tell a lost publish from a slow confirm: the retry may be a second copy. Each
        // extra copy is a later attempt: the rule is per body (no attempt of a message delivered twice, so its copies
        // are its distinct attempts). The volume of retries is not bounded here (every batch published into the
        // frozen link retries); the duplicatesAtMost below restates that rule in the figures, it is no separate bound.
        Deliveries.Report report =
                Deliveries.expect(sent).quiet(Duration.ofMillis(1_500)).await(received, Duration.ofSeconds(90));
        List<Received> all = report.all();
        long retried =
                all.stream().filter(r -> r.header(RelayHeaders.ATTEMPT) > 1).count();
        Deliveries.Report bounded = Deliveries.expect(sent)
                .duplicatesAtMost((int) retried, "deliveries of attempts > 1 (each a retry after a confirm timeout)")
                .measure(all);
        FaultFigures.of(
                "4b confirm timeouts (link frozen)",
                bounded,
                "deliveriesAfterATimeout=" + retried + " dead=" + kit.countAll(business, "dead"));
        bounded.assertClean();
        assertThat(all.stream().map(r -> r.text() + "#" + r.header(RelayHeaders.ATTEMPT)))
                .as("no attempt of a message delivered twice")
                .doesNotHaveDuplicates();
        assertThat(retried).as("deliveries retried after a confirm timeout").isPositive();
        assertThat(kit.countAll(business, "dead")).isZero();
        kit.awaitInflightSettled(business, Duration.ofSeconds(10));
    }

    private static double nacks(MeterRegistry registry, String business) {
        return FrozenLinkRelay.failures(registry, business, PublishOutcome.Cause.NACK);
    }

    private List<String> schedule(String business, String prefix) {
        return schedule(business, prefix, MESSAGES);
    }

    private List<String> schedule(String business, String prefix, int count) {
        RedisDelayedMessageProducer producer = kit.producer();
        List<String> sent = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            String body = prefix + i;
            producer.scheduleAfter(business, body, Duration.ZERO);
            sent.add(body);
        }
        return sent;
    }
}
