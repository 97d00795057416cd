package io.delayrelay.app.faults;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.Deliveries.Inbox;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 2: RabbitMQ stopped for 30 s ({@code rabbitmqctl stop_app}) while messages keep falling due. The broker is
 * a node of this test's own ({@link PrivateRabbit}): stopping the shared one would break every other test using it.
 * Stays long (~60 s): the outage lasts the 30 s the fault names, and the relay must catch up after it.
 */
@Tag("faults")
class BrokerOutageTest {

    static final long OUTAGE_MS = 30_000;
    static final int RATE_PER_SECOND = 100;
    /**
     * The load runs until the relay is seen relaying again after the outage, at most this long. A fixed 50 s load
     * ended before the broker was back on a busy box (the first 200 deliveries took 25 s): everything was delivered
     * before the test looked, and "something relayed after the restore" could never come.
     */
    static final long MAX_LOAD_MS = 180_000;

    static final int THREADS = 2;
    /**
     * Batch size of the relays under test: small, so that the duplicate bound below stays under the messages sent
     * (at the default batch of 1,000 the bound allowed every message twice).
     */
    static final int BATCH = 50;

    /** Most entries one relay may hold popped and unsettled: threads x batch-size x InFlightBudget.BATCHES_OF_DATA. */
    static final int WINDOW = THREADS * BATCH * 4;

    private final RelayTestKit kit = new RelayTestKit();
    private PrivateRabbit rabbit;
    private Connection amqp;

    @AfterEach
    void cleanUp() throws Exception {
        try {
            if (amqp != null) {
                amqp.abort();
            }
        } finally {
            try {
                if (rabbit != null) {
                    rabbit.close();
                }
            } finally {
                kit.close();
            }
        }
    }

    @Test
    void relaySurvivesThirtySecondsWithoutTheBrokerReconnectsAndLosesNothing() throws Exception {
        rabbit = PrivateRabbit.start("outage");
        String business = kit.business("broker-down");
        String exchange = "test.faults.broker-down." + business;
        String queue = "test.faults.q." + business;
        amqp = rabbit.connect("broker-outage-test");
        Channel channel = amqp.createChannel();
        // Durable topology and persistent messages: what survives a broker restart in production too.
        channel.exchangeDeclare(exchange, "direct", true);
        channel.queueDeclare(queue, true, false, false, null);
        channel.queueBind(queue, exchange, "due");
        channel.close();
        BlockingQueue<Received> sink = new LinkedBlockingQueue<>();
        consume(queue, sink);
        Inbox received = new Inbox(sink);

        Map<String, Object> props = new LinkedHashMap<>();
        props.put("spring.data.redis.host", TestServices.redis().host());
        props.put("spring.data.redis.port", TestServices.redis().port());
        props.put("spring.rabbitmq.host", PrivateRabbit.HOST);
        props.put("spring.rabbitmq.port", rabbit.port());
        props.put("relay.reaper-interval", "500ms");
        RelayTestKit.business(
                props,
                business,
                exchange,
                "due",
                "threads",
                THREADS,
                "batch-size",
                BATCH,
                "publish-timeout",
                "5s",
                "lease",
                "15s");

        List<String> sent = new CopyOnWriteArrayList<>();
        Map<String, Long> due = new ConcurrentHashMap<>();
        AtomicBoolean producing = new AtomicBoolean(true);
        RedisDelayedMessageProducer producer = kit.producer();
        Thread load = new Thread(
                () -> {
                    long start = System.currentTimeMillis();
                    int i = 0;
                    while (producing.get() && System.currentTimeMillis() - start < MAX_LOAD_MS) {
                        String body = "bo-" + i++;
                        due.put(body, producer.scheduleAfter(business, body, Duration.ofMillis(500)));
                        sent.add(body);
                        try {
                            Thread.sleep(1000 / RATE_PER_SECOND);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "broker-outage-load");

        try (RelayProcess relay = RelayProcess.start("broker-outage", props, false, RelayProcess.C1)) {
            // a JVM start takes 20-60 s on a busy 2-core machine
            await().atMost(Duration.ofMinutes(3)).until(() -> relay.started() || !relay.isAlive());
            assertThat(relay.started()).as("relay started; see %s", relay.log()).isTrue();
            load.start();
            // the relay is relaying when the outage begins (a fixed 8 s wait once saw nothing delivered yet on a busy
            // box)
            await().atMost(Duration.ofMinutes(1)).until(() -> received.distinct() >= 200 || !relay.isAlive());
            int beforeOutage = received.distinct();
            long cpuBefore;
            long cpuAfter;
            long outageStarted = System.currentTimeMillis();
            try {
                rabbit.ctl("stop_app");
                cpuBefore = relay.cpuMs();
                Thread.sleep(OUTAGE_MS);
                cpuAfter = relay.cpuMs();
            } finally {
                rabbit.ctl("start_app");
                rabbit.ctl("await_startup");
            }
            // A fresh consumer once the node is up: the client's automatic recovery may re-consume before the
            // restarted node has recovered the queue, and then gives the consumer up (seen at load 30).
            amqp.abort();
            amqp = rabbit.connect("broker-outage-test-after");
            consume(queue, sink);
            long restored = System.currentTimeMillis();
            int atRestore = received.distinct();
            assertThat(relay.isAlive())
                    .as("relay survived the outage; see %s", relay.log())
                    .isTrue();
            try {
                await().atMost(Duration.ofSeconds(60)).until(() -> received.distinct() > atRestore);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                // what the relay's workers do when nothing comes after the broker is back
                throw new AssertionError(
                        "nothing relayed within 60 s after the broker came back (" + atRestore + " before); threads: "
                                + relay.threadDump() + ", log: " + relay.log(),
                        e);
            }
            long reconnectMs = System.currentTimeMillis() - restored;
            producing.set(false);
            load.join();
            Deliveries.Report drained = Deliveries.expect(sent)
                    .scheduledDue(due)
                    .quiet(Duration.ofSeconds(2))
                    .await(received, Duration.ofMinutes(2));
            long retried = relay.retriedAfterConfirmTimeout();
            Deliveries.Report report = Deliveries.expect(sent)
                    .scheduledDue(due)
                    .duplicatesAtMost(
                            (int) (WINDOW + retried),
                            "in-flight window " + WINDOW + " x 1 outage + " + retried
                                    + " retried after a confirm timeout")
                    .measure(drained.all());
            double cpuPercent = 100.0 * (cpuAfter - cpuBefore) / OUTAGE_MS;
            FaultFigures.of(
                    "2 RabbitMQ down 30 s",
                    report,
                    String.format(
                            "deliveredBeforeOutage=%d outageMs=%d relayCpuDuringOutage=%.1f%% firstDeliveryAfterRestoreMs=%d",
                            beforeOutage, restored - outageStarted, cpuPercent, reconnectMs));
            assertThat(report.lost())
                    .as(
                            "lost %s; still in Redis: %s; relay log %s",
                            report.lostSample(), whereIs(business, report.lostSample()), relay.log())
                    .isZero();
            report.assertClean();
            assertThat(cpuPercent)
                    .as("relay CPU during the outage (%% of one core)")
                    .isLessThan(50.0);
            kit.awaitInflightSettled(business, Duration.ofSeconds(20));
        } finally {
            producing.set(false);
            load.join(5_000);
        }
    }

    /** Consumes the queue on the private node with the test's current connection, into {@code received}. */
    private void consume(String queue, BlockingQueue<Received> received) throws Exception {
        Channel ch = amqp.createChannel();
        ch.basicQos(500);
        // acknowledged once kept: a delivery to a connection that dies is redelivered, never lost to the test
        ch.basicConsume(queue, false, new DefaultConsumer(ch) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                    throws java.io.IOException {
                Map<String, Object> headers = new HashMap<>();
                if (props.getHeaders() != null) {
                    props.getHeaders()
                            .forEach((k, v) -> headers.put(k, v instanceof LongString ls ? ls.toString() : v));
                }
                received.add(new Received(body, headers, props.getMessageId(), System.currentTimeMillis()));
                getChannel().basicAck(envelope.getDeliveryTag(), false);
            }
        });
    }

    /** Where the relay's keys of the business still hold a body (a zset member), for a failure's message. */
    private String whereIs(String business, List<String> bodies) {
        StringBuilder found = new StringBuilder();
        try (org.springframework.data.redis.connection.RedisConnection c = kit.redis()) {
            for (String body : bodies) {
                found.append(body).append(':');
                for (String key : kit.keysOf(business)) {
                    byte[] k = key.getBytes(java.nio.charset.StandardCharsets.UTF_8);
                    if (c.keyCommands().type(k) == org.springframework.data.redis.connection.DataType.ZSET) {
                        Double score =
                                c.zSetCommands().zScore(k, body.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                        if (score != null) {
                            found.append(' ').append(key).append('=').append(score.longValue());
                        }
                    }
                }
                found.append("; ");
            }
        }
        return found.toString();
    }
}
