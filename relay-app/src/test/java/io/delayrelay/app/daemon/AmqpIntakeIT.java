package io.delayrelay.app.daemon;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RepositoryRoot;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The AMQP intake as users run it: two exec-jar relays consume one intake; a pika publisher (examples/intake) and a
 * Spring AMQP {@code RabbitTemplate} publisher, unchanged but for the exchange, publish 2,000 messages with
 * {@code x-delay}; one relay is killed -9 in the middle of the intake. Every message arrives once, never before its
 * publish time + x-delay, with its properties and routing key; messages cancelled by id never arrive; bad x-delay
 * values are in the dead set with their reason; messages without x-delay arrive at once.
 */
class AmqpIntakeIT {

    private static final Duration START = Duration.ofSeconds(150);
    private static final int PER_PUBLISHER = 1_000;
    private static final int CANCELLED = 50;
    private static final int BAD = 20;
    private static final int AT_ONCE = 20;
    /**
     * Least x-delay of both publishers (each adds up to 990 ms): the kill must come before any message taken in by
     * then is due. A relay killed while it held due entries in flight is the relay's documented at-least-once window
     * (they are published again when their lease ends, 30 s later), not what this test checks. At 3-4 s the pika
     * publisher's first messages were due before the kill on a loaded CI machine.
     */
    private static final long DELAY = 8_000;
    /**
     * x-delay of the first {@link #CANCELLED} Java messages: long enough to cancel them on a loaded machine (the
     * publishers, the kill and the take-over took over 10 s with the test pool's other forks busy, and over 20 s on a
     * slower machine: every cancel came after its message was delivered).
     */
    private static final long CANCELLED_DELAY = 45_000;

    private final RelayTestKit kit = new RelayTestKit();
    private final List<RelayProcess> processes = new ArrayList<>();
    private final List<String> intakeQueues = new ArrayList<>();
    private final List<String> intakeExchanges = new ArrayList<>();

    /** A delivery as the consumer got it. */
    record Got(String routingKey, AMQP.BasicProperties properties, String body, long receivedAtMs) {}

    @AfterEach
    void cleanUp() throws Exception {
        for (RelayProcess process : processes) {
            process.close();
        }
        for (String q : intakeQueues) {
            kit.channel().queueDelete(q);
        }
        for (String e : intakeExchanges) {
            kit.channel().exchangeDelete(e);
        }
        kit.close();
    }

    private RelayProcess start(String name, Map<String, Object> props) throws Exception {
        Map<String, Object> own = new HashMap<>(props);
        own.put("relay.fleet.instance-id", name);
        RelayProcess process = RelayProcess.start(name, own, false, RelayProcess.C1);
        processes.add(process);
        return process;
    }

    @Test
    void publishersOfThePluginKeepTheirCodeAndEveryMessageArrivesOnceAfterAKill9MidIntake() throws Exception {
        String intake = kit.business("intake-it");
        String exchange = "it.intake.in." + intake;
        String deliverTo = "it.intake.out." + intake;
        intakeExchanges.add(exchange);
        intakeExchanges.add(deliverTo);
        intakeQueues.add("delay-relay.intake." + intake);
        kit.channel().exchangeDeclare(deliverTo, "topic", true);
        BlockingQueue<Got> got = consume(deliverTo);

        Map<String, Object> props = kit.baseProperties();
        props.put("relay.intakes." + intake + ".exchange", exchange);
        props.put("relay.intakes." + intake + ".deliver-to", deliverTo);
        props.put("relay.intakes." + intake + ".prefetch", 50);
        props.put("relay.businesses." + intake + ".shards", 4);
        props.put("relay.division.seat-ttl", "3s");
        RelayProcess a = start(intake + "-a", props);
        RelayProcess b = start(intake + "-b", props);
        await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
            for (RelayProcess p : List.of(a, b)) {
                if (!p.isAlive()) {
                    throw new AssertionError("relay exited:\n" + p.output());
                }
            }
            return consumers("delay-relay.intake." + intake) == 2;
        });

        Process probe = new ProcessBuilder("/usr/bin/python3", "-c", "import pika").start();
        assertThat(probe.waitFor(30, TimeUnit.SECONDS) && probe.exitValue() == 0)
                .as("Python's pika package is missing for examples/intake/publish.py: apt-get install python3-pika"
                        + " (scripts/test.sh installs it when run as root)")
                .isTrue();
        // the pika publisher of examples/intake, as a user runs it, 4 ms apart: the intake runs about 4 s
        Process python = new ProcessBuilder(
                        "/usr/bin/python3",
                        "examples/intake/publish.py",
                        TestServices.rabbit().host(),
                        Integer.toString(TestServices.rabbit().port()),
                        exchange,
                        Integer.toString(PER_PUBLISHER),
                        "py-",
                        Long.toString(DELAY),
                        "4")
                .directory(RepositoryRoot.path().toFile())
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        Map<String, long[]> sent = new ConcurrentHashMap<>(); // id -> {sent at, x-delay}
        Thread reader = new Thread(() -> readSent(python, sent));
        reader.start();

        // a Spring AMQP publisher, as it published to the plugin's exchange: MessageProperties.setDelayLong
        CachingConnectionFactory cf = new CachingConnectionFactory(
                TestServices.rabbit().host(), TestServices.rabbit().port());
        RabbitTemplate template = new RabbitTemplate(cf);
        long killedAt = 0;
        try {
            for (int i = 0; i < PER_PUBLISHER; i++) {
                MessageProperties mp = new MessageProperties();
                long delay = i < CANCELLED ? CANCELLED_DELAY : DELAY + (i % 100) * 10L;
                mp.setDelayLong(delay);
                mp.setMessageId("java-" + i);
                mp.setContentType("text/plain");
                mp.setCorrelationId("corr-" + i);
                mp.setPriority(3);
                mp.setHeader("seq", i);
                long at = System.currentTimeMillis();
                template.send(
                        exchange,
                        "payments." + (i % 2),
                        new Message(("java " + i).getBytes(StandardCharsets.UTF_8), mp));
                sent.put("java-" + i, new long[] {at, delay});
                if (i == PER_PUBLISHER / 2) {
                    a.kill9(); // in the middle of both publishers' intake
                    killedAt = System.currentTimeMillis();
                }
                Thread.sleep(2);
            }
            for (int i = 0; i < BAD; i++) {
                MessageProperties mp = new MessageProperties();
                mp.setHeader("x-delay", "in a while");
                mp.setMessageId("bad-" + i);
                template.send(exchange, "bad", new Message("bad".getBytes(StandardCharsets.UTF_8), mp));
            }
            for (int i = 0; i < AT_ONCE; i++) {
                MessageProperties mp = new MessageProperties();
                mp.setMessageId("now-" + i);
                long at = System.currentTimeMillis();
                template.send(exchange, "now", new Message(("now " + i).getBytes(StandardCharsets.UTF_8), mp));
                sent.put("now-" + i, new long[] {at, 0});
            }
        } finally {
            cf.destroy();
        }
        assertThat(killedAt).isPositive();
        assertThat(python.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(python.exitValue()).isZero();
        reader.join(10_000);
        assertThat(sent).hasSize(2 * PER_PUBLISHER + AT_ONCE);
        long firstDue = Long.MAX_VALUE;
        for (long[] m : sent.values()) {
            if (m[0] <= killedAt) {
                firstDue = Math.min(firstDue, m[0] + m[1]);
            }
        }
        assertThat(firstDue)
                .as(
                        "the test's timeline: the kill came %d ms after the first message taken in by then was due"
                                + " (raise DELAY)",
                        killedAt - firstDue)
                .isGreaterThan(killedAt);

        // cancelled by message id through relay-api once taken in, long before due
        String intakeQueue = "delay-relay.intake." + intake;
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(kit.scheduled(intake) + delivered(got))
                .as(
                        "taken in: scheduled %d + delivered %d; %d ready in %s; keys %s",
                        kit.scheduled(intake),
                        delivered(got),
                        kit.channel().messageCount(intakeQueue),
                        intakeQueue,
                        kit.keysOf(intake))
                .isGreaterThanOrEqualTo(2L * PER_PUBLISHER + AT_ONCE));
        int cancelled = 0;
        for (int i = 0; i < CANCELLED; i++) {
            if (kit.producer().cancelById(intake, "java-" + i)) {
                cancelled++;
            }
        }
        assertThat(cancelled)
                .as(
                        "cancelled before due (%d ms after the first was sent, due after %d ms; scheduled %d,"
                                + " delivered %d, keys %s)",
                        System.currentTimeMillis() - sent.get("java-0")[0],
                        CANCELLED_DELAY,
                        kit.scheduled(intake),
                        got.size(),
                        kit.keysOf(intake))
                .isEqualTo(CANCELLED);

        int expected = 2 * PER_PUBLISHER + AT_ONCE - CANCELLED;
        List<Got> all = collect(got, expected, Duration.ofSeconds(60), Duration.ofSeconds(1));
        // the cancelled ones would have been due by now + 2 s: listen that long for any of them
        long cancelledDue = sent.get("java-" + (CANCELLED - 1))[0] + CANCELLED_DELAY;
        all.addAll(collect(
                got,
                0,
                Duration.ZERO,
                Duration.ofMillis(Math.max(0, cancelledDue + 2_000 - System.currentTimeMillis()))));
        Map<String, Got> byId = new HashMap<>();
        for (Got g : all) {
            assertThat(byId.put(g.properties().getMessageId(), g))
                    .as("once: " + g.properties().getMessageId())
                    .isNull();
        }
        assertThat(all).hasSize(expected);
        long worstLag = 0;
        for (Map.Entry<String, long[]> e : sent.entrySet()) {
            String id = e.getKey();
            Got g = byId.get(id);
            int n = id.startsWith("java-") ? Integer.parseInt(id.substring(5)) : -1;
            if (n >= 0 && n < CANCELLED) {
                assertThat(g).as("cancelled " + id).isNull();
                continue;
            }
            assertThat(g).as("delivered " + id).isNotNull();
            long notBefore = e.getValue()[0] + e.getValue()[1];
            assertThat(g.receivedAtMs()).as("never early: " + id).isGreaterThanOrEqualTo(notBefore);
            long due = ((Number) g.properties().getHeaders().get(RelayHeaders.DUE_AT)).longValue();
            worstLag = Math.max(worstLag, g.receivedAtMs() - due);
            assertThat(g.properties().getHeaders()).doesNotContainKey("x-delay");
            if (id.startsWith("java-")) {
                assertThat(g.routingKey()).isEqualTo("payments." + (n % 2));
                assertThat(g.body()).isEqualTo("java " + n);
                assertThat(g.properties().getContentType()).isEqualTo("text/plain");
                assertThat(g.properties().getCorrelationId()).isEqualTo("corr-" + n);
                assertThat(g.properties().getPriority()).isEqualTo(3);
                assertThat(g.properties().getHeaders().get("seq")).isEqualTo(n);
            } else if (id.startsWith("py-")) {
                int p = Integer.parseInt(id.substring(3));
                assertThat(g.routingKey()).isEqualTo("orders." + (p % 3));
                assertThat(g.body()).isEqualTo("{\"order\":" + p + "}");
                assertThat(g.properties().getContentType()).isEqualTo("application/json");
                assertThat(g.properties().getHeaders().get("tenant")).hasToString("acme");
            } else {
                assertThat(g.receivedAtMs() - e.getValue()[0])
                        .as("at once: " + id)
                        .isLessThan(5_000);
            }
        }
        System.out.printf(
                "FIGURE amqp intake: %d delivered once after a kill -9 mid-intake, %d cancelled, worst lag %d ms%n",
                all.size(), CANCELLED, worstLag);

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(intake);
        try (RedisConnection c = kit.redis()) {
            int dead = 0;
            for (int shard = 0; shard < 4; shard++) {
                for (byte[] reason : c.hashCommands().hVals(DelayQueueKeys.bytes(keys.deadReasons(shard)))) {
                    assertThat(new String(reason, StandardCharsets.UTF_8))
                            .isEqualTo("intake " + intake
                                    + ": x-delay 'in a while' (string) is not an integer number of milliseconds");
                    dead++;
                }
            }
            assertThat(dead).isEqualTo(BAD);
            // both relays stored (and read) the messages after the first 200 with one dictionary: the first one stored
            Map<byte[], byte[]> dictionaries = c.hashCommands().hGetAll(DelayQueueKeys.bytes(keys.dictionaries()));
            assertThat(dictionaries).hasSize(2);
            String current = new String(
                    c.hashCommands().hGet(DelayQueueKeys.bytes(keys.dictionaries()), DelayQueueKeys.bytes("current")),
                    StandardCharsets.UTF_8);
            assertThat(current).matches("[0-9a-f]{8}");
            assertThat(c.hashCommands().hGet(DelayQueueKeys.bytes(keys.dictionaries()), DelayQueueKeys.bytes(current)))
                    .isNotNull();
        }
        assertThat(kit.scheduled(intake)).isZero();
    }

    private BlockingQueue<Got> consume(String deliverTo) throws Exception {
        Channel ch = kit.channel();
        String queue = kit.queue(deliverTo, "#");
        BlockingQueue<Got> got = new LinkedBlockingQueue<>();
        ch.basicConsume(queue, true, new DefaultConsumer(ch) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                got.add(new Got(
                        envelope.getRoutingKey(),
                        props,
                        new String(body, StandardCharsets.UTF_8),
                        System.currentTimeMillis()));
            }
        });
        return got;
    }

    private static long delivered(BlockingQueue<Got> got) {
        return got.size();
    }

    private static List<Got> collect(BlockingQueue<Got> queue, int expected, Duration timeout, Duration quiet)
            throws InterruptedException {
        List<Got> all = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (all.size() < expected && System.nanoTime() < deadline) {
            Got g = queue.poll(100, TimeUnit.MILLISECONDS);
            if (g != null) {
                all.add(g);
            }
        }
        long quietUntil = System.nanoTime() + quiet.toNanos();
        while (System.nanoTime() < quietUntil) {
            Got g = queue.poll(50, TimeUnit.MILLISECONDS);
            if (g != null) {
                all.add(g);
            }
        }
        return all;
    }

    private int consumers(String queue) {
        try (RelayTestKit probe = new RelayTestKit()) {
            return probe.channel().queueDeclarePassive(queue).getConsumerCount();
        } catch (Exception e) {
            return -1;
        }
    }

    private static void readSent(Process python, Map<String, long[]> sent) {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(python.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.split(" ");
                sent.put(f[0], new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
