package io.delayrelay.app.engine.amqp;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker's batch goes to the broker in one socket write ({@link CoalescingSocketFactory}) on the real RabbitMQ:
 * every message confirmed and delivered once, in order, byte for byte; other writes on the connection are never held
 * and never overtake what was held before them.
 */
class CoalescedWritesTest {

    private static final int BATCH = 200;

    private final RelayTestKit kit = new RelayTestKit();
    private final CoalescingSocketFactory sockets = new CoalescingSocketFactory();
    private final CachingConnectionFactory connections = connections(sockets);
    private final AmqpBatchPublisher publisher = new AmqpBatchPublisher(connections, new RedisClock());

    @AfterEach
    void close() {
        publisher.destroy();
        connections.destroy();
        kit.close();
    }

    @Test
    void aBatchOf200GoesOutInAtMostTwoSocketWritesAndEveryMessageArrivesOnceInOrderByteForByte() throws Exception {
        String exchange = kit.exchange("coalesce");
        BlockingQueue<Received> inbox = kit.consume(kit.queue(exchange, "rk"));
        BusinessSpec spec = spec(exchange);
        // the first batch opens the worker's channel (its writes go out at once); the second is measured
        assertThat(publisher.publish(spec, batch("coalesce", "warm", 1)).get(10, TimeUnit.SECONDS))
                .containsExactly(PublishOutcome.CONFIRMED);

        long before = sockets.writes();
        CompletableFuture<List<PublishOutcome>> outcomes = publisher.publish(spec, batch("coalesce", "m", BATCH));
        long batchWrites = sockets.writes() - before;

        assertThat(outcomes.get(10, TimeUnit.SECONDS)).hasSize(BATCH).containsOnly(PublishOutcome.CONFIRMED);
        // 200 messages of ~300 bytes on the wire: one write per 64 KB held
        assertThat(batchWrites).as("socket writes of a batch of %d", BATCH).isBetween(1L, 2L);
        List<Received> got = RelayTestKit.collect(inbox, BATCH + 1, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(got).extracting(Received::text).containsExactlyElementsOf(texts("warm", 1, "m", BATCH));
    }

    @Test
    void publishesOutsideAWaveAreWrittenOneByOneSoTheCountIsReal() throws Exception {
        String exchange = kit.exchange("plain");
        BlockingQueue<Received> inbox = kit.consume(kit.queue(exchange, "rk"));
        Channel channel = connections.createConnection().createChannel(false);
        try {
            long before = sockets.writes();
            for (int i = 0; i < 50; i++) {
                channel.basicPublish(exchange, "rk", null, ("p-" + i).getBytes(StandardCharsets.UTF_8));
            }
            assertThat(sockets.writes() - before).isEqualTo(50);
        } finally {
            channel.close();
        }
        assertThat(RelayTestKit.collect(inbox, 50, Duration.ofSeconds(10), Duration.ofMillis(200)))
                .extracting(Received::text)
                .containsExactlyElementsOf(texts("p", 50, "", 0));
    }

    @Test
    void aCallThatWaitsForTheBrokersReplyInsideAWaveIsNotHeldAndSendsWhatWasHeldFirst() throws Exception {
        String exchange = kit.exchange("rpc");
        BlockingQueue<Received> inbox = kit.consume(kit.queue(exchange, "rk"));
        Channel channel = connections.createConnection().createChannel(false);
        try (CoalescingSocketFactory.Wave wave = CoalescingSocketFactory.wave()) {
            wave.defer(() -> channel.basicPublish(exchange, "rk", null, "held".getBytes(StandardCharsets.UTF_8)));
            // a channel open waits for open-ok: were it held, this would wait for the RPC timeout
            long start = System.nanoTime();
            Channel other = connections.createConnection().createChannel(false);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
            other.close();
            // the held publish went out ahead of the channel open, before the wave ended
            assertThat(inbox.poll(5, TimeUnit.SECONDS))
                    .extracting(Received::text)
                    .isEqualTo("held");
        } finally {
            channel.close();
        }
    }

    @Test
    void anotherThreadsWriteDuringAWaveGoesOutAfterTheBytesHeldBeforeIt() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                Socket client = sockets.createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort());
                Socket accepted = server.accept()) {
            OutputStream out = client.getOutputStream();
            long before = sockets.writes();
            try (CoalescingSocketFactory.Wave wave = CoalescingSocketFactory.wave()) {
                wave.defer(() -> out.write(bytes("a1|")));
                wave.defer(() -> out.write(bytes("a2|")));
                assertThat(sockets.writes() - before).as("held, not written").isZero();
                CompletableFuture.runAsync(() -> {
                            try {
                                out.write(bytes("b1|"));
                            } catch (java.io.IOException e) {
                                throw new IllegalStateException(e);
                            }
                        })
                        .get(5, TimeUnit.SECONDS);
                assertThat(sockets.writes() - before)
                        .as("the held bytes and b1 in one write")
                        .isEqualTo(1);
                wave.defer(() -> out.write(bytes("a3|")));
                try (CoalescingSocketFactory.Wave nested = CoalescingSocketFactory.wave()) {
                    nested.defer(() -> out.write(bytes("a4|")));
                }
                assertThat(sockets.writes() - before)
                        .as("a nested wave's end sends nothing")
                        .isEqualTo(1);
            }
            assertThat(sockets.writes() - before).isEqualTo(2);
            client.shutdownOutput();
            assertThat(readAll(accepted.getInputStream())).isEqualTo("a1|a2|b1|a3|a4|");
        }
    }

    @Test
    void heldBytesAreWrittenOnceTheyReach64KbSoALongBatchStartsGoingOutBeforeItsEnd() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                Socket client = sockets.createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort());
                Socket accepted = server.accept()) {
            OutputStream out = client.getOutputStream();
            byte[] chunk = new byte[10_000];
            ByteArrayOutputStream expected = new ByteArrayOutputStream();
            long before = sockets.writes();
            CompletableFuture<String> read = CompletableFuture.supplyAsync(() -> readAllUnchecked(accepted));
            try (CoalescingSocketFactory.Wave wave = CoalescingSocketFactory.wave()) {
                for (int i = 0; i < 20; i++) {
                    java.util.Arrays.fill(chunk, (byte) ('a' + i));
                    byte[] copy = chunk.clone();
                    expected.write(copy);
                    wave.defer(() -> out.write(copy));
                }
                // 200,000 bytes: 6 chunks fit in 64 KB, the 7th sends them
                assertThat(sockets.writes() - before).isEqualTo(3);
            }
            assertThat(sockets.writes() - before).isEqualTo(4);
            client.shutdownOutput();
            assertThat(read.get(10, TimeUnit.SECONDS)).isEqualTo(expected.toString(StandardCharsets.ISO_8859_1));
        }
    }

    private static CachingConnectionFactory connections(CoalescingSocketFactory sockets) {
        TestServices.Endpoint rabbit = TestServices.rabbit();
        ConnectionFactory amqp = new ConnectionFactory();
        amqp.setHost(rabbit.host());
        amqp.setPort(rabbit.port());
        amqp.setSocketFactory(sockets);
        CachingConnectionFactory factory = new CachingConnectionFactory(amqp);
        factory.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.CORRELATED);
        factory.setPublisherReturns(true);
        return factory;
    }

    private static BusinessSpec spec(String exchange) {
        return BusinessSpec.builder("coalesce", DelayQueueKeys.forBusiness("coalesce"))
                .exchange(exchange, "direct", false)
                .routingKey("rk")
                .publishTimeout(Duration.ofSeconds(10))
                .build();
    }

    /** {@code n} due messages of {@code business}, shard 0, each body its member: "{@code prefix}-i". */
    static List<DueMessage> batch(String business, String prefix, int n) {
        List<DueMessage> batch = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] member = (prefix + "-" + i).getBytes(StandardCharsets.UTF_8);
            batch.add(new DueMessage(business, 0, member, member, false, 1_000L, 1_000L, 1, "id-" + prefix + i));
        }
        return batch;
    }

    private static List<String> texts(String first, int n, String second, int m) {
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            texts.add(first + "-" + i);
        }
        for (int i = 0; i < m; i++) {
            texts.add(second + "-" + i);
        }
        return texts;
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    private static String readAll(InputStream in) throws java.io.IOException {
        return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }

    private static String readAllUnchecked(Socket socket) {
        try {
            return readAll(socket.getInputStream());
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
