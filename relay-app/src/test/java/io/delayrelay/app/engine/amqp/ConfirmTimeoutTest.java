package io.delayrelay.app.engine.amqp;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.ConnectionFactory;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TestServices;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch whose confirms never come (the broker's bytes stop between it and the relay, the connection stays open)
 * gets CONFIRM_TIMEOUT for every message at its own publish timeout, on the real broker: no earlier, and at most the
 * timeout sweep's period plus a margin later; a batch published meanwhile times out at its own deadline.
 */
class ConfirmTimeoutTest {

    private static final Duration TIMEOUT = Duration.ofMillis(600);

    private final RelayTestKit kit = new RelayTestKit();
    private FreezingProxy proxy;
    private CachingConnectionFactory connections;
    private AmqpBatchPublisher publisher;

    @AfterEach
    void close() throws IOException {
        if (publisher != null) {
            publisher.destroy();
        }
        if (connections != null) {
            connections.destroy();
        }
        if (proxy != null) {
            proxy.close();
        }
        kit.close();
    }

    @Test
    void everyMessageOfABatchWithoutConfirmsTimesOutAtItsOwnDeadlineNotBefore() throws Exception {
        proxy = new FreezingProxy(TestServices.rabbit());
        ConnectionFactory amqp = new ConnectionFactory();
        amqp.setHost("127.0.0.1");
        amqp.setPort(proxy.port());
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
        assertThat(publisher.publish(spec, batch("warm", 3)).get(10, TimeUnit.SECONDS))
                .containsOnly(PublishOutcome.CONFIRMED);

        proxy.freeze();
        long first = System.nanoTime();
        CompletableFuture<List<PublishOutcome>> a = publisher.publish(spec, batch("a", 5));
        CompletableFuture<Long> aDone = a.thenApply(o -> System.nanoTime());
        Thread.sleep(200); // the second batch's deadline is 200 ms after the first's
        long second = System.nanoTime();
        CompletableFuture<List<PublishOutcome>> b = publisher.publish(spec, batch("b", 4));
        CompletableFuture<Long> bDone = b.thenApply(o -> System.nanoTime());

        assertThat(a.get(5, TimeUnit.SECONDS)).hasSize(5).allMatch(ConfirmTimeoutTest::timedOut);
        assertThat(b.get(5, TimeUnit.SECONDS)).hasSize(4).allMatch(ConfirmTimeoutTest::timedOut);
        long margin = AmqpBatchPublisher.CONFIRM_SWEEP_MS + 400;
        assertThat(Duration.ofNanos(aDone.get() - first).toMillis())
                .isBetween(TIMEOUT.toMillis(), TIMEOUT.toMillis() + margin);
        assertThat(Duration.ofNanos(bDone.get() - second).toMillis())
                .isBetween(TIMEOUT.toMillis(), TIMEOUT.toMillis() + margin);
        assertThat(bDone.get()).isGreaterThan(aDone.get());
    }

    private static boolean timedOut(PublishOutcome outcome) {
        return outcome.cause() == PublishOutcome.Cause.CONFIRM_TIMEOUT;
    }

    private static List<DueMessage> batch(String prefix, int n) {
        List<DueMessage> batch = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] member = (prefix + "-" + i).getBytes(StandardCharsets.UTF_8);
            batch.add(new DueMessage("timeout", 0, member, member, false, 1_000L, 1_000L, 1, "id-" + prefix + i));
        }
        return batch;
    }

    /** A TCP proxy to the broker that can stop passing bytes either way while keeping the connections open. */
    private static final class FreezingProxy implements AutoCloseable {

        private final ServerSocket server;
        private final TestServices.Endpoint target;
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();
        private volatile boolean frozen;

        FreezingProxy(TestServices.Endpoint target) throws IOException {
            this.target = target;
            this.server = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
            Thread accept = new Thread(this::accept, "freezing-proxy-accept");
            accept.setDaemon(true);
            accept.start();
        }

        int port() {
            return server.getLocalPort();
        }

        void freeze() {
            frozen = true;
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket client = server.accept();
                    Socket broker = new Socket(target.host(), target.port());
                    sockets.add(client);
                    sockets.add(broker);
                    pump(client, broker);
                    pump(broker, client);
                } catch (IOException e) {
                    return;
                }
            }
        }

        private void pump(Socket from, Socket to) {
            Thread t = new Thread(
                    () -> {
                        byte[] buffer = new byte[16 * 1024];
                        try (InputStream in = from.getInputStream();
                                OutputStream out = to.getOutputStream()) {
                            int n;
                            while ((n = in.read(buffer)) >= 0) {
                                while (frozen && !from.isClosed()) {
                                    Thread.sleep(20);
                                }
                                out.write(buffer, 0, n);
                            }
                        } catch (IOException | InterruptedException e) {
                            // closed
                        }
                    },
                    "freezing-proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket socket : sockets) {
                socket.close();
            }
        }
    }
}
