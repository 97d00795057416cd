package io.delayrelay.app.engine.amqp;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.ConnectionFactory;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TcpProxy;
import io.delayrelay.app.support.TestServices;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch whose confirms never come (the broker's bytes stop between it and the relay, the connection stays open)
 * gets CONFIRM_TIMEOUT for every message at its own publish timeout, on the real broker: no earlier, and at most the
 * timeout sweep's period plus a margin later; a batch published meanwhile times out at its own deadline.
 */
@Tag("timing")
class ConfirmTimeoutTest {

    private static final Duration TIMEOUT = Duration.ofMillis(600);

    private final RelayTestKit kit = new RelayTestKit();
    private TcpProxy proxy;
    private CachingConnectionFactory connections;
    private AmqpBatchPublisher publisher;

    /** Closes the frozen proxy first: with it open, the AMQP close handshake could only time out (~40 s). */
    @AfterEach
    void close() throws IOException {
        if (proxy != null) {
            proxy.close();
        }
        if (publisher != null) {
            publisher.destroy();
        }
        if (connections != null) {
            connections.destroy();
        }
        kit.close();
    }

    @Test
    void everyMessageOfABatchWithoutConfirmsTimesOutAtItsOwnDeadlineNotBefore() throws Exception {
        TestServices.Endpoint rabbit = TestServices.rabbit();
        int port = FreePort.next();
        proxy = new TcpProxy(port, rabbit.host(), rabbit.port());
        ConnectionFactory amqp = new ConnectionFactory();
        amqp.setHost("127.0.0.1");
        amqp.setPort(port);
        amqp.setSocketFactory(new CoalescingSocketFactory());
        connections = new CachingConnectionFactory(amqp);
        publisher = new AmqpBatchPublisher(connections, new RedisClock());
        String exchange = kit.exchange("timeout");
        kit.queue(exchange, "rk");
        BusinessSpec spec = BusinessSpec.builder("timeout", DelayQueueKeys.forBusiness("timeout"))
                .exchange(exchange, "direct", false)
                .routingKey("rk")
                .publishTimeout(TIMEOUT)
                .build();
        assertThat(publisher
                        .publish(spec, CoalescedWritesTest.batch("timeout", "warm", 3))
                        .get(10, TimeUnit.SECONDS))
                .containsOnly(PublishOutcome.CONFIRMED);

        proxy.freeze();
        long first = System.nanoTime();
        CompletableFuture<List<PublishOutcome>> a =
                publisher.publish(spec, CoalescedWritesTest.batch("timeout", "a", 5));
        CompletableFuture<Long> aDone = a.thenApply(o -> System.nanoTime());
        Thread.sleep(200); // the second batch's deadline is 200 ms after the first's
        long second = System.nanoTime();
        CompletableFuture<List<PublishOutcome>> b =
                publisher.publish(spec, CoalescedWritesTest.batch("timeout", "b", 4));
        CompletableFuture<Long> bDone = b.thenApply(o -> System.nanoTime());

        assertThat(a.get(5, TimeUnit.SECONDS)).hasSize(5).allMatch(ConfirmTimeoutTest::timedOut);
        assertThat(b.get(5, TimeUnit.SECONDS)).hasSize(4).allMatch(ConfirmTimeoutTest::timedOut);
        long margin = ConfirmDeadlines.SWEEP_MS + 400;
        assertThat(Duration.ofNanos(aDone.get() - first).toMillis())
                .isBetween(TIMEOUT.toMillis(), TIMEOUT.toMillis() + margin);
        assertThat(Duration.ofNanos(bDone.get() - second).toMillis())
                .isBetween(TIMEOUT.toMillis(), TIMEOUT.toMillis() + margin);
        assertThat(bDone.get()).isGreaterThan(aDone.get());
    }

    private static boolean timedOut(PublishOutcome outcome) {
        return outcome.cause() == PublishOutcome.Cause.CONFIRM_TIMEOUT;
    }
}
