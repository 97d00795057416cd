package io.delayrelay.app.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.Deliveries.Inbox;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.zset.DefaultTuple;
import org.springframework.data.redis.connection.zset.Tuple;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 6: broker-side scale-out. A 3-node RabbitMQ cluster (scripts/rabbit-cluster.sh), a quorum queue bound to
 * the business's exchange, the relay (exec jar, {@code spring.rabbitmq.addresses} = all nodes) relaying a stream of
 * messages falling due at 5,000/s from just after it started, and the node the relay is connected to (which also leads
 * the queue) stopped once 25,000 have been popped. The writer keeps the stream going until the node is down and a
 * whole in-flight window has been relayed without it, however long the stop takes on a busy machine, so the node is
 * always lost mid-drain. Stays long (~45 s): the 3-node cluster takes ~20 s to form.
 */
@Tag("faults")
// runs alone: under the pool's load a graceful node stop (rabbitmqctl stop) took 56 s, and the writer streamed 454,000
// messages meanwhile, slowing every other test of the pool
@Tag("timing")
class RabbitNodeLossTest {

    /** Messages popped before the node is stopped. */
    static final int BEFORE_STOP = 25_000;
    /** The most messages the writer writes (~100 s of due times): past it the test fails instead of streaming on. */
    static final int MAX_MESSAGES = 500_000;

    static final int SHARDS = 16;
    static final int THREADS = 4;
    static final int BATCH = 100;
    /** Batch-sizes of entries a worker may have popped and not yet settled (InFlightBudget.BATCHES_OF_DATA). */
    static final int BATCHES_PER_WORKER = 4;
    /** Most entries the relay holds unconfirmed: what a lost connection may cause to be published twice. */
    static final int WINDOW = THREADS * BATCH * BATCHES_PER_WORKER;
    /** Unacked deliveries the consumer may hold; a queue leader change redelivers them (flagged redelivered). */
    static final int PREFETCH = 500;

    /** Messages falling due per ms: 5,000/s, within what the relay sustains on a loaded machine. */
    static final int RATE_PER_MS = 5;
    /** How far ahead of their due time the writer writes the messages. */
    static final long WRITE_AHEAD_MS = 2_000;

    static final String ROUTING_KEY = "due";

    /** The node the relay connects to first (first address) and the queue's leader: the one stopped. */
    static final int STOPPED = 0;
    /** The node the test's consumer stays connected to. */
    static final int CONSUMER_NODE = 2;

    private static RabbitCluster cluster;

    private final RelayTestKit kit = new RelayTestKit();

    @BeforeAll
    static void startCluster() {
        cluster = RabbitCluster.up();
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void stoppingTheRelaysNodeMidDrainLosesNothingAndTheRelayFailsOverWithoutARestart() throws Exception {
        String business = kit.business("rnode");
        String exchange = "test.rnode." + business;
        String queue = "test.rnode.q." + business;
        declareOnStoppedNode(exchange, queue);
        String leaderBefore = cluster.queueInfo(CONSUMER_NODE, queue);
        assertThat(leaderBefore)
                .as("quorum queue led by the node to be stopped")
                .contains("\t" + cluster.node(STOPPED) + "@localhost\t");

        try (Connection consumerConnection = cluster.connect(CONSUMER_NODE, "rnode-consumer")) {
            AckingConsumer consumer = new AckingConsumer(consumerConnection.createChannel());
            consumer.start(queue);
            Inbox received = new Inbox(consumer.received);

            try (RelayProcess relay = RelayProcess.start("rnode", relayProperties(business, exchange))) {
                // the due times start once the relay runs: a start slowed by a busy machine must not eat the 20 s
                // of due times, or the drain could end before the node stops
                await().atMost(Duration.ofMinutes(3))
                        .pollInterval(Duration.ofMillis(100))
                        .until(() -> relay.started() || !relay.isAlive());
                assertThat(relay.isAlive())
                        .as("relay started; see %s", relay.log())
                        .isTrue();
                Writer writer = new Writer(business);
                writer.start();
                long started = System.currentTimeMillis();
                // BEFORE_STOP popped by the relay (not received: on a busy machine the consumer lags the relay)
                await().atMost(Duration.ofMinutes(3))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> writer.popped() >= BEFORE_STOP || !relay.isAlive() || writer.failed());
                writer.assertHealthy();
                assertThat(relay.isAlive())
                        .as("relay alive until the node stops; see %s", relay.log())
                        .isTrue();
                assertThat(cluster.connectionsOn(STOPPED))
                        .as("the relay is connected to the first address, %s", cluster.node(STOPPED))
                        .isPositive();

                int deliveredAtStop = received.distinct();
                long inflightAtStop = kit.countAll(business, "inflight");
                long stopAt = System.currentTimeMillis();
                // A graceful node stop takes seconds (it closes client connections first): run it aside and watch the
                // relay meanwhile.
                CompletableFuture<Long> stopping = CompletableFuture.supplyAsync(() -> {
                    cluster.stopNode(STOPPED);
                    return System.currentTimeMillis();
                });

                // Recovered = the node is down and the relay is back to full batches through another node: a whole
                // in-flight window of messages published after the stop ended has reached the consumer. The writer
                // streams until then, so there is always something left to relay after the node is gone.
                try {
                    await().atMost(Duration.ofMinutes(2))
                            .pollInterval(Duration.ofMillis(20))
                            .until(() ->
                                    (stopping.isDone() && relayedSince(received.drain(), stopping.join()) >= WINDOW)
                                            || !relay.isAlive()
                                            || writer.failed());
                } catch (ConditionTimeoutException e) {
                    throw new AssertionError(
                            String.format(
                                    "not recovered 2 min after the node stop (stop %s): %d relayed since the stop began"
                                            + " (a window is %d), %d distinct received of %d written, %d scheduled, %d"
                                            + " in flight, consumer channel open %s; relay threads in %s, log %s",
                                    stopping.isDone() ? "done" : "still running",
                                    relayedSince(received.drain(), stopAt),
                                    WINDOW,
                                    received.distinct(),
                                    writer.written(),
                                    kit.scheduled(business),
                                    kit.countAll(business, "inflight"),
                                    consumer.isOpen(),
                                    relay.threadDump(),
                                    relay.log()),
                            e);
                }
                List<String> sent = writer.finish();
                long recoverMs = System.currentTimeMillis() - stopAt;
                assertThat(relay.isAlive())
                        .as("relay alive after the node stopped; see %s", relay.log())
                        .isTrue();
                long stopped = stopping.get(3, TimeUnit.MINUTES);
                System.out.printf(
                        "%s stopped after %d ms of drain (stop took %d ms, relay recovered after %d ms): "
                                + "%d delivered, %d in flight%n",
                        cluster.node(STOPPED),
                        stopAt - started,
                        stopped - stopAt,
                        recoverMs,
                        deliveredAtStop,
                        inflightAtStop);
                String leaderAfter = cluster.queueInfo(CONSUMER_NODE, queue);

                Deliveries.Report drained =
                        Deliveries.expect(sent).quiet(Duration.ofSeconds(2)).await(received, Duration.ofMinutes(5));
                long retried = relay.retriedAfterConfirmTimeout();
                Deliveries.Report report = Deliveries.expect(sent)
                        .duplicatesAtMost(
                                (int) (WINDOW + PREFETCH + retried),
                                "in-flight window " + WINDOW + " x 1 node loss + consumer prefetch " + PREFETCH
                                        + " redelivered by the leader change + " + retried
                                        + " retried after a confirm timeout")
                        .measure(drained.all());
                long drainMs = System.currentTimeMillis() - started;
                // Deliveries whose confirm was lost with the node are retried although they reached the queue; a
                // retry that fails again (the surviving nodes still electing the leader) waits twice as long, so the
                // wait runs to the latest retry time or lease deadline in {K:i}:inflight, plus 15 s.
                kit.awaitInflightSettled(business, Duration.ofSeconds(15));
                List<Received> all = report.all();
                FaultFigures.of(
                        "6 RabbitMQ node stopped mid-drain (" + sent.size() / 1000 + "k)",
                        report,
                        String.format(
                                "window=%d relayDuplicates=%d brokerRedeliveries=%d deliveredAtStop=%d inFlightAtStop=%d "
                                        + "stopMs=%d recoverMs=%d publishGapMs=%d unconfirmedBatches=%d drainMs=%d",
                                WINDOW,
                                consumer.firstHandDuplicates(),
                                consumer.redelivered.get(),
                                deliveredAtStop,
                                inflightAtStop,
                                stopped - stopAt,
                                recoverMs,
                                longestPublishGap(all, stopAt - 1_000),
                                unconfirmedBatches(relay),
                                drainMs));
                System.out.println("queue before: " + leaderBefore + "\nqueue after:  " + leaderAfter);

                report.assertClean();
                assertThat(consumer.firstHandDuplicates())
                        .as("messages the relay published twice")
                        .isLessThanOrEqualTo(WINDOW);
                assertThat(oneMessageIdPerBody(all))
                        .as("duplicates carry their original's message id")
                        .isTrue();
                assertThat(kit.scheduled(business)).as("left scheduled").isZero();
                assertThat(kit.countAll(business, "dead")).as("dead letters").isZero();
                assertThat(relay.isAlive())
                        .as("the same relay process drained everything; see %s", relay.log())
                        .isTrue();
                assertThat(leaderAfter)
                        .as("a surviving node leads the queue")
                        .doesNotContain("\t" + cluster.node(STOPPED) + "@localhost\t");
                assertThat(recoverMs)
                        .as("time from the node stop to a full window relayed without it")
                        .isLessThan(Duration.ofMinutes(1).toMillis());
            }
        }
    }

    /**
     * Exchange and quorum queue declared through the node that will be stopped: RabbitMQ places a new quorum queue's
     * leader on the declaring client's node, so the stop also forces a leader election.
     */
    private static void declareOnStoppedNode(String exchange, String queue) throws Exception {
        try (Connection c = cluster.connect(STOPPED, "rnode-declare");
                Channel ch = c.createChannel()) {
            ch.exchangeDeclare(exchange, "direct", true);
            ch.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            ch.queueBind(queue, exchange, ROUTING_KEY);
        }
    }

    /** Messages received that the relay published at or after {@code sinceMs} (relayed-at header, Redis time). */
    private static long relayedSince(List<Received> received, long sinceMs) {
        return received.stream()
                .filter(r -> r.header(RelayHeaders.RELAYED_AT) >= sinceMs)
                .count();
    }

    /**
     * Longest interval after {@code fromMs} in which nothing the relay published reached the consumer: how long
     * publishing stalled around the node loss (relayed-at of consecutive delivered messages).
     */
    private static long longestPublishGap(List<Received> received, long fromMs) {
        long[] relayedAt = received.stream()
                .mapToLong(r -> r.header(RelayHeaders.RELAYED_AT))
                .filter(t -> t >= fromMs)
                .sorted()
                .toArray();
        long gap = 0;
        for (int i = 1; i < relayedAt.length; i++) {
            gap = Math.max(gap, relayedAt[i] - relayedAt[i - 1]);
        }
        return gap;
    }

    /** Batches the relay logged as not confirmed (nacked, or lost with the connection) during the run. */
    private static long unconfirmedBatches(RelayProcess relay) throws IOException {
        try (Stream<String> lines = Files.lines(relay.log())) {
            return lines.filter(l -> l.contains("messages not confirmed")).count();
        }
    }

    private static boolean oneMessageIdPerBody(List<Received> received) {
        Map<String, String> ids = new HashMap<>();
        for (Received r : received) {
            String first = ids.putIfAbsent(r.text(), r.messageId());
            if (first != null && !first.equals(r.messageId())) {
                System.out.println("message id changed for " + r.text() + ": " + first + " then " + r.messageId());
                return false;
            }
        }
        return true;
    }

    /**
     * Consumes with manual acks (an auto-acked delivery in transit from a dying queue leader would be lost by the
     * consumer, not the relay) and tells first-hand deliveries from the broker's redeliveries of unacked ones.
     */
    private static final class AckingConsumer extends DefaultConsumer {
        final BlockingQueue<Received> received = new LinkedBlockingQueue<>();
        final AtomicInteger redelivered = new AtomicInteger();
        private final Map<String, Integer> firstHand = new ConcurrentHashMap<>();

        AckingConsumer(Channel channel) {
            super(channel);
        }

        boolean isOpen() {
            return getChannel().isOpen();
        }

        void start(String queue) throws IOException {
            getChannel().basicQos(PREFETCH);
            getChannel().basicConsume(queue, false, this);
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                throws IOException {
            Map<String, Object> headers = new HashMap<>();
            if (props.getHeaders() != null) {
                props.getHeaders().forEach((k, v) -> headers.put(k, v instanceof LongString s ? s.toString() : v));
            }
            Received r = new Received(body, headers, props.getMessageId(), System.currentTimeMillis());
            if (envelope.isRedeliver()) {
                redelivered.incrementAndGet();
            } else {
                firstHand.merge(r.text(), 1, Integer::sum);
            }
            received.add(r);
            getChannel().basicAck(envelope.getDeliveryTag(), false);
        }

        @Override
        public void handleCancel(String consumerTag) {
            System.out.println("consumer cancelled by the broker: " + consumerTag);
        }

        /** Messages published more than once by the relay: first-hand (not redelivered) arrivals beyond one. */
        int firstHandDuplicates() {
            return firstHand.values().stream().mapToInt(n -> n - 1).sum();
        }
    }

    /**
     * Writes the messages straight into the shards (pipelined ZADD per shard), as any producer could: message i falls due
     * at the first due time + i / {@link #RATE_PER_MS} ms and is written about {@link #WRITE_AHEAD_MS} before that, so
     * the relay publishes at that pace however fast the machine is. It writes until {@link #finish()} (or
     * {@link #MAX_MESSAGES}), and checks every message was added.
     */
    private final class Writer {
        private final String business;
        private final DelayQueueKeys keys;
        private final List<String> sent = new ArrayList<>();
        private final Thread thread;
        private volatile boolean stop;
        private volatile int written;
        private volatile Throwable failure;

        Writer(String business) {
            this.business = business;
            this.keys = DelayQueueKeys.forBusiness(business);
            this.thread = new Thread(this::run, "rnode-writer");
            thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        private void run() {
            try {
                long firstDue = kit.redisNowMs() + WRITE_AHEAD_MS;
                int chunk = RATE_PER_MS * 100;
                while (!stop) {
                    assertThat(written)
                            .as("messages written before the node was lost and recovered")
                            .isLessThan(MAX_MESSAGES);
                    long writeAt = firstDue + written / RATE_PER_MS - WRITE_AHEAD_MS;
                    long wait = writeAt - kit.redisNowMs();
                    if (wait > 0) {
                        Thread.sleep(wait); // the producer's pace, not a wait for a condition
                        continue;
                    }
                    write(firstDue, written, chunk);
                    written += chunk;
                }
            } catch (Throwable e) {
                failure = e;
            }
        }

        private void write(long firstDue, int from, int count) {
            Map<Integer, Set<Tuple>> byShard = new LinkedHashMap<>();
            List<String> bodies = new ArrayList<>(count);
            for (int i = from; i < from + count; i++) {
                String body = "rn-" + i;
                bodies.add(body);
                byte[] member = body.getBytes(StandardCharsets.UTF_8);
                byShard.computeIfAbsent(ShardSelector.shardOf(member, SHARDS), s -> new HashSet<>())
                        .add(new DefaultTuple(member, (double) (firstDue + i / RATE_PER_MS)));
            }
            long added = 0;
            try (RedisConnection c = kit.redis()) {
                c.openPipeline();
                byShard.forEach(
                        (shard, tuples) -> c.zSetCommands().zAdd(DelayQueueKeys.bytes(keys.shard(shard)), tuples));
                for (Object result : c.closePipeline()) {
                    added += (Long) result;
                }
            }
            assertThat(added).as("members added").isEqualTo(count);
            synchronized (sent) {
                sent.addAll(bodies);
            }
        }

        int written() {
            return written;
        }

        /** Messages written and no longer scheduled: popped by the relay. */
        long popped() {
            return written - kit.scheduled(business);
        }

        boolean failed() {
            return failure != null;
        }

        void assertHealthy() {
            if (failure != null) {
                throw new AssertionError("the writer failed", failure);
            }
        }

        /** Stops writing and returns every message written. */
        List<String> finish() throws InterruptedException {
            stop = true;
            thread.join(Duration.ofSeconds(30).toMillis());
            assertHealthy();
            synchronized (sent) {
                return new ArrayList<>(sent);
            }
        }
    }

    /**
     * The relay as users run it against a cluster: every node in {@code spring.rabbitmq.addresses}. The default
     * address order (no shuffle) makes it connect to rc1 first, the node this test stops.
     */
    private static Map<String, Object> relayProperties(String business, String exchange) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.data.redis.host", TestServices.redis().host());
        p.put("spring.data.redis.port", TestServices.redis().port());
        p.put("spring.rabbitmq.addresses", cluster.addresses());
        p.put("relay.reaper-interval", "500ms");
        String b = "relay.businesses." + business + ".";
        p.put(b + "exchange", exchange);
        p.put(b + "routing-key", ROUTING_KEY);
        p.put(b + "shards", SHARDS);
        p.put(b + "threads", THREADS);
        p.put(b + "batch-size", BATCH);
        p.put(b + "lease", "5s");
        p.put(b + "publish-timeout", "3s");
        return p;
    }
}
