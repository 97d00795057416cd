package io.delayrelay.app.engine.amqp;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.delayrelay.app.trigger.MessageShape;
import io.delayrelay.app.trigger.OutgoingMessages;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

/**
 * The two message shapes as a consumer reads them from the real broker: each message is built by the relay's
 * builder, published as the relay does (persistent, mandatory) and read back by a consumer; the exact properties and
 * the exact header set are asserted.
 */
class MessageShapeTest {

    private static final long DUE = 1_800_000_000_000L;
    private static final long POPPED = DUE + 7;
    private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    /** What a consumer got: the properties and the headers with long strings read as text. */
    record Got(AMQP.BasicProperties properties, Map<String, Object> headers, byte[] body) {}

    private final RelayTestKit kit = new RelayTestKit();
    private final RedisClock clock = new RedisClock();

    MessageShapeTest() {
        // the clock's estimate trails the pop's own Redis time: relayed-at is the pop's time, POPPED
        clock.observe(DUE - 5_000);
    }

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void theFullShapeCarriesTheMessageIdContentTypeAndEveryRelayHeader() throws Exception {
        Got plain = roundTrip(MessageShape.FULL, firstDelivery());
        Got byId = roundTrip(MessageShape.FULL, redeliveryById());

        assertThat(plain.properties().getMessageId()).isEqualTo("mid-1");
        assertThat(plain.properties().getDeliveryMode()).isEqualTo(2);
        assertThat(plain.properties().getContentType()).isEqualTo("application/octet-stream");
        assertThat(plain.properties().getPriority()).isZero();
        assertThat(plain.headers())
                .containsOnly(
                        entry(RelayHeaders.BUSINESS, "shape"),
                        entry(RelayHeaders.DUE_AT, DUE),
                        entry(RelayHeaders.RELAYED_AT, POPPED),
                        entry(RelayHeaders.SHARD, 2),
                        entry(RelayHeaders.ATTEMPT, 1));
        assertThat(plain.body()).isEqualTo("body-1".getBytes(StandardCharsets.UTF_8));

        assertThat(byId.properties().getMessageId()).isEqualTo("mid-2");
        assertThat(byId.headers())
                .containsOnly(
                        entry("traceparent", TRACEPARENT),
                        entry("tenant", "acme"),
                        entry(RelayHeaders.BUSINESS, "shape"),
                        entry(RelayHeaders.DUE_AT, DUE),
                        entry(RelayHeaders.RELAYED_AT, POPPED),
                        entry(RelayHeaders.SHARD, 2),
                        entry(RelayHeaders.ATTEMPT, 3),
                        entry(RelayHeaders.ID, "order-2"));
    }

    @Test
    void theLeanShapeCarriesTheMessageIdAndTheProducersHeadersOnly() throws Exception {
        Got plain = roundTrip(MessageShape.LEAN, firstDelivery());
        Got byId = roundTrip(MessageShape.LEAN, redeliveryById());

        assertThat(plain.properties().getMessageId()).isEqualTo("mid-1");
        assertThat(plain.properties().getDeliveryMode()).isEqualTo(2);
        assertThat(plain.properties().getContentType()).isNull();
        assertThat(plain.properties().getPriority()).isNull();
        assertThat(plain.properties().getHeaders())
                .as("no header table at all on a first delivery without producer headers")
                .isNull();
        assertThat(plain.body()).isEqualTo("body-1".getBytes(StandardCharsets.UTF_8));

        assertThat(byId.properties().getMessageId()).isEqualTo("mid-2");
        assertThat(byId.properties().getContentType()).isNull();
        assertThat(byId.headers())
                .as("the producer's headers; the attempt of a redelivery; the id of an entry scheduled by id")
                .containsOnly(
                        entry("traceparent", TRACEPARENT),
                        entry("tenant", "acme"),
                        entry(RelayHeaders.ATTEMPT, 3),
                        entry(RelayHeaders.ID, "order-2"));
    }

    @Test
    void aProducersHeaderNamedAsOneOfTheRelaysIsNeverPublishedInEitherShape() {
        DueMessage forged = new DueMessage(
                "shape",
                2,
                "m".getBytes(),
                "body".getBytes(),
                false,
                DUE,
                POPPED,
                1,
                "mid-3",
                Map.of("tenant", "acme", RelayHeaders.DUE_AT, "0", RelayHeaders.ATTEMPT, "9"));

        AmqpMessageBuilder builder = new AmqpMessageBuilder(clock);
        Map<String, Object> lean =
                builder.build(spec(MessageShape.LEAN), forged).properties().getHeaders();
        Map<String, Object> full =
                builder.build(spec(MessageShape.FULL), forged).properties().getHeaders();

        assertThat(lean).containsOnly(entry("tenant", "acme"));
        assertThat(full).containsEntry(RelayHeaders.DUE_AT, DUE).containsEntry(RelayHeaders.ATTEMPT, 1);
    }

    @Test
    void aTriggerThatBuildsItsOwnMessageIsHandedTheLeanPropertiesToStartFrom() {
        OutgoingMessages custom = new OutgoingMessages() {
            @Override
            public Message toAmqpMessage(DueMessage message, MessageProperties properties) {
                properties.setHeader("x-custom", "yes");
                return new Message(message.body(), properties);
            }
        };
        BusinessSpec spec = withOutgoing(spec(MessageShape.LEAN), custom);

        AmqpMessageBuilder.Built built = new AmqpMessageBuilder(clock).build(spec, redeliveryById());

        assertThat(built.properties().getMessageId()).isEqualTo("mid-2");
        assertThat(built.properties().getHeaders())
                .containsOnlyKeys("traceparent", "tenant", "x-custom", RelayHeaders.ATTEMPT, RelayHeaders.ID);
    }

    /** Builds the message, publishes it as the relay does and returns what a consumer of the queue reads. */
    private Got roundTrip(MessageShape shape, DueMessage message) throws Exception {
        String exchange = kit.exchange("shape-" + shape.value());
        String queue = kit.queue(exchange, "rk");
        AmqpMessageBuilder.Built built = new AmqpMessageBuilder(clock).build(spec(shape), message);
        BlockingQueue<Got> inbox = new LinkedBlockingQueue<>();
        Channel consumer = kit.channel().getConnection().createChannel();
        try {
            consumer.basicConsume(queue, true, new DefaultConsumer(consumer) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    Map<String, Object> headers = new HashMap<>();
                    if (props.getHeaders() != null) {
                        props.getHeaders()
                                .forEach((k, v) -> headers.put(k, v instanceof LongString ls ? ls.toString() : v));
                    }
                    inbox.add(new Got(props, headers, body));
                }
            });
            Channel publisher = kit.channel().getConnection().createChannel();
            try {
                publisher.confirmSelect();
                publisher.basicPublish(exchange, built.routingKey(), true, built.properties(), built.body());
                publisher.waitForConfirmsOrDie(Duration.ofSeconds(10).toMillis());
            } finally {
                publisher.close();
            }
            Got got = inbox.poll(10, TimeUnit.SECONDS);
            assertThat(got).as("the message published to %s arrived", exchange).isNotNull();
            return got;
        } finally {
            consumer.close();
        }
    }

    private static DueMessage firstDelivery() {
        return new DueMessage(
                "shape",
                2,
                "m-1".getBytes(),
                "body-1".getBytes(StandardCharsets.UTF_8),
                false,
                DUE,
                POPPED,
                1,
                "mid-1");
    }

    private static DueMessage redeliveryById() {
        return new DueMessage(
                "shape",
                2,
                "order-2".getBytes(StandardCharsets.UTF_8),
                "body-2".getBytes(StandardCharsets.UTF_8),
                true,
                DUE,
                POPPED,
                3,
                "mid-2",
                Map.of("traceparent", TRACEPARENT, "tenant", "acme"));
    }

    /** The business of these tests with a message shape (AmqpMessageBuilderTest uses it too). */
    static BusinessSpec spec(MessageShape shape) {
        return BusinessSpec.builder("shape", DelayQueueKeys.forBusiness("shape"))
                .shards(4)
                .threads(1)
                .exchange("ex", "direct", false)
                .routingKey("rk")
                .batchSize(100)
                .batchBytes(1L << 20)
                .maxAttempts(5)
                .retryDelay(Duration.ofSeconds(1), Duration.ofMinutes(1))
                .publishTimeout(Duration.ofSeconds(5))
                .deadBounds(10_000, Duration.ofDays(7))
                .messageShape(shape)
                .build();
    }

    private static BusinessSpec withOutgoing(BusinessSpec s, OutgoingMessages outgoing) {
        return s.toBuilder().outgoing(outgoing).build();
    }
}
