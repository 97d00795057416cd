package io.delayrelay.app.intake;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
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
import io.delayrelay.api.ShardSelector;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.ops.ScheduledEntries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.endpoint.event.RefreshEvent;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.core.RedisTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The AMQP intake against the real RabbitMQ and Redis: publishers keep the delayed-message plugin's habits
 * ({@code x-delay} on a publish to an exchange), consumers get the message unchanged from the deliver-to exchange.
 */
class AmqpIntakeTest {

    private final RelayTestKit kit = new RelayTestKit();
    private final List<String> intakeExchanges = new ArrayList<>();
    private final List<String> intakeQueues = new ArrayList<>();

    /** A delivery as the consumer got it. */
    record Got(String routingKey, AMQP.BasicProperties properties, byte[] body, long receivedAtMs) {}

    @AfterEach
    void cleanUp() throws IOException {
        kit.close();
        try (RelayTestKit admin = new RelayTestKit()) {
            for (String q : intakeQueues) {
                admin.channel().queueDelete(q);
            }
            for (String e : intakeExchanges) {
                admin.channel().exchangeDelete(e);
            }
        }
    }

    /** Starts a relay with one intake of an intake-only business; returns {exchange, deliver-to}. */
    private String[] startIntake(String name, Object... more) throws IOException {
        return startIntake(name, Map.of(), more);
    }

    /** The same, with {@code global} relay properties. */
    private String[] startIntake(String name, Map<String, Object> global, Object... more) throws IOException {
        String deliverTo = "test.intake.out." + name;
        kit.channel().exchangeDeclare(deliverTo, "topic", false, true, null);
        String exchange = "test.intake.in." + name;
        intakeExchanges.add(exchange);
        intakeQueues.add("delay-relay.intake." + name);
        Map<String, Object> p = kit.baseProperties();
        p.put("relay.intakes." + name + ".exchange", exchange);
        p.put("relay.intakes." + name + ".deliver-to", deliverTo);
        for (int i = 0; i < more.length; i += 2) {
            p.put("relay.intakes." + name + "." + more[i], more[i + 1]);
        }
        p.putAll(global);
        kit.startRelay(p);
        await().atMost(Duration.ofSeconds(10)).until(() -> consuming(exchange, name));
        return new String[] {exchange, deliverTo};
    }

    private static boolean consuming(String exchange, String name) {
        try (RelayTestKit probe = new RelayTestKit()) {
            probe.channel().exchangeDeclarePassive(exchange);
            return probe.channel()
                            .queueDeclarePassive("delay-relay.intake." + name)
                            .getConsumerCount()
                    == 1;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private BlockingQueue<Got> consume(String deliverTo, String bindingKey) throws IOException {
        Channel ch = kit.channel();
        String queue = ch.queueDeclare("", false, true, true, null).getQueue();
        ch.queueBind(queue, deliverTo, bindingKey);
        BlockingQueue<Got> got = new LinkedBlockingQueue<>();
        ch.basicConsume(queue, true, new DefaultConsumer(ch) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                got.add(new Got(envelope.getRoutingKey(), props, body, System.currentTimeMillis()));
            }
        });
        return got;
    }

    @Test
    void aMessageWithXDelayArrivesAfterItsDelayWithEveryPropertyAndItsRoutingKey() throws Exception {
        String name = kit.business("intake");
        String[] ex = startIntake(name);
        BlockingQueue<Got> got = consume(ex[1], "orders.#");

        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("x-delay", 1500);
        headers.put("tenant", "acme");
        headers.put("retries", 3L);
        headers.put("flag", true);
        headers.put("nested", Map.of("k", "v"));
        AMQP.BasicProperties sent = new AMQP.BasicProperties.Builder()
                .contentType("application/json")
                .contentEncoding("utf-8")
                .headers(headers)
                .deliveryMode(2)
                .priority(5)
                .correlationId("corr-1")
                .replyTo("replies")
                .expiration("600000")
                .messageId("order-42")
                .timestamp(new Date(1_700_000_000_000L))
                .type("order.cancel")
                .appId("shop")
                .build();
        byte[] body = "{\"order\":42}".getBytes(StandardCharsets.UTF_8);
        long before = kit.redisNowMs();
        kit.channel().basicPublish(ex[0], "orders.eu.cancel", sent, body);

        Got g = got.poll(10, TimeUnit.SECONDS);
        assertThat(g).as("delivered").isNotNull();
        assertThat(got.poll(500, TimeUnit.MILLISECONDS)).as("once").isNull();
        AMQP.BasicProperties p = g.properties();
        long dueAt = ((Number) p.getHeaders().get(RelayHeaders.DUE_AT)).longValue();
        // Redis time at intake + x-delay: the intake takes the message in within a second of the publish
        assertThat(dueAt).isBetween(before + 1500, before + 1500 + 1000);
        assertThat(g.receivedAtMs()).isGreaterThanOrEqualTo(dueAt);
        assertThat(g.routingKey()).isEqualTo("orders.eu.cancel");
        assertThat(g.body()).isEqualTo(body);
        assertThat(p.getContentType()).isEqualTo("application/json");
        assertThat(p.getContentEncoding()).isEqualTo("utf-8");
        assertThat(p.getDeliveryMode()).isEqualTo(2);
        assertThat(p.getPriority()).isEqualTo(5);
        assertThat(p.getCorrelationId()).isEqualTo("corr-1");
        assertThat(p.getReplyTo()).isEqualTo("replies");
        assertThat(p.getExpiration()).isEqualTo("600000");
        assertThat(p.getMessageId()).isEqualTo("order-42");
        assertThat(p.getTimestamp()).isEqualTo(new Date(1_700_000_000_000L));
        assertThat(p.getType()).isEqualTo("order.cancel");
        assertThat(p.getAppId()).isEqualTo("shop");
        assertThat(p.getHeaders()).doesNotContainKey("x-delay");
        assertThat(p.getHeaders().get("tenant")).isInstanceOf(LongString.class).hasToString("acme");
        assertThat(p.getHeaders().get("retries")).isEqualTo(3L);
        assertThat(p.getHeaders().get("flag")).isEqualTo(true);
        assertThat(((Map<?, ?>) p.getHeaders().get("nested")).get("k")).hasToString("v");
        assertThat(p.getHeaders().get(RelayHeaders.ID)).hasToString("order-42");
        assertThat(p.getHeaders().get(RelayHeaders.BUSINESS)).hasToString(name);
    }

    @Test
    void onceTheDictionaryIsTrainedMessagesAreStoredCompressedShownInTheConsoleAndDeliveredUnchanged()
            throws Exception {
        String name = kit.business("intake-dict");
        String[] ex = startIntake(name, Map.of("relay.intake-dictionary-samples", 20));
        BlockingQueue<Got> got = consume(ex[1], "#");

        Map<String, byte[]> bodies = new LinkedHashMap<>();
        for (int i = 0; i < 60; i++) {
            String id = "order-" + i;
            byte[] body = ("{\"order\":" + (1000 + i) + ",\"customer\":\"c-" + (i * 7919 % 10_000) + "\",\"amount\":\""
                            + (i * 31 % 500) + ".95\",\"status\":\"created\"}")
                    .getBytes(StandardCharsets.UTF_8);
            bodies.put(id, body);
            Map<String, Object> headers = new LinkedHashMap<>();
            headers.put("x-delay", 3_000);
            headers.put("tenant", "acme");
            headers.put("order", 1000 + i);
            kit.channel()
                    .basicPublish(
                            ex[0],
                            "orders.created." + (i % 3),
                            new AMQP.BasicProperties.Builder()
                                    .messageId(id)
                                    .contentType("application/json")
                                    .deliveryMode(2)
                                    .headers(headers)
                                    .build(),
                            body);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> kit.scheduled(name) == 60);

        // the first 19 are stored as they are (samples), the 20th completes the dictionary: it and the rest compressed
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(name);
        RedisTemplate<byte[], byte[]> redis = ByteRedisTemplates.create(kit.redisFactory());
        Map<Integer, List<String>> byShard = new LinkedHashMap<>();
        int compressed = 0;
        long compressedBytes = 0;
        long plainBytes = 0;
        for (String id : bodies.keySet()) {
            int shard = ShardSelector.shardOf(id, 16);
            byte[] payload = (byte[]) redis.opsForHash().get(bytes(keys.payloads(shard)), bytes(id));
            if (EnvelopeCompression.isCompressed(payload)) {
                compressed++;
                compressedBytes += payload.length;
            } else {
                plainBytes += payload.length;
            }
            byShard.computeIfAbsent(shard, k -> new ArrayList<>()).add(id);
        }
        assertThat(compressed).isEqualTo(41);
        assertThat(compressedBytes / 41.0).as("bytes of a compressed one").isLessThan(plainBytes / 19.0 / 2);
        assertThat(redis.opsForHash().get(bytes(keys.dictionaries()), bytes("current")))
                .isNotNull();

        // the console shows a compressed entry like any other: where it goes, and its body
        BusinessSpec spec = BusinessSpec.builder(name, keys).build();
        Map<String, String> previews =
                new ScheduledEntries(redis, new EnvelopeCompression(redis)).previews(spec, byShard);
        assertThat(previews).hasSize(60);
        int last = ShardSelector.shardOf("order-59", 16);
        assertThat(previews.get(last + ":order-59"))
                .isEqualTo("[intake: to '" + ex[1] + "', routing key 'orders.created.2'] "
                        + new String(bodies.get("order-59"), StandardCharsets.UTF_8));

        Map<String, Got> delivered = new LinkedHashMap<>();
        for (int i = 0; i < 60; i++) {
            Got g = got.poll(10, TimeUnit.SECONDS);
            assertThat(g).as("delivery %d", i).isNotNull();
            assertThat(delivered.put(g.properties().getMessageId(), g))
                    .as("once")
                    .isNull();
        }
        assertThat(got.poll(500, TimeUnit.MILLISECONDS)).isNull();
        assertThat(delivered.keySet()).isEqualTo(bodies.keySet());
        delivered.forEach((id, g) -> {
            int i = Integer.parseInt(id.substring("order-".length()));
            assertThat(g.body()).isEqualTo(bodies.get(id));
            assertThat(g.routingKey()).isEqualTo("orders.created." + (i % 3));
            assertThat(g.properties().getContentType()).isEqualTo("application/json");
            assertThat(g.properties().getHeaders().get("order")).isEqualTo(1000 + i);
            assertThat(g.properties().getHeaders().get("tenant")).hasToString("acme");
            assertThat(g.properties().getHeaders()).doesNotContainKey("x-delay");
            assertThat(g.receivedAtMs())
                    .isGreaterThanOrEqualTo(
                            ((Number) g.properties().getHeaders().get(RelayHeaders.DUE_AT)).longValue());
        });
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void withoutXDelayOrWithANegativeOneTheMessageGoesAtOnce() throws Exception {
        String name = kit.business("intake-now");
        String[] ex = startIntake(name);
        BlockingQueue<Got> got = consume(ex[1], "#");

        long sentAt = System.currentTimeMillis();
        kit.channel().basicPublish(ex[0], "a", new AMQP.BasicProperties(), "plain".getBytes(StandardCharsets.UTF_8));
        kit.channel()
                .basicPublish(
                        ex[0],
                        "b",
                        new AMQP.BasicProperties.Builder()
                                .headers(Map.of("x-delay", "-5000"))
                                .build(),
                        "negative".getBytes(StandardCharsets.UTF_8));

        List<Got> both = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Got g = got.poll(5, TimeUnit.SECONDS);
            assertThat(g).as("delivery %d", i).isNotNull();
            both.add(g);
        }
        assertThat(both).extracting(Got::routingKey).containsExactlyInAnyOrder("a", "b");
        assertThat(both).allSatisfy(g -> assertThat(g.receivedAtMs() - sentAt).isLessThan(2_000));
        assertThat(both).allSatisfy(g -> assertThat(g.properties().getMessageId())
                .as("a stable id the relay derives")
                .isNotBlank());
    }

    @Test
    void aBadXDelayGoesToTheDeadSetWithItsReasonAndNeverToTheConsumers() throws Exception {
        String name = kit.business("intake-bad");
        String[] ex = startIntake(name, "max-delay", "1h");
        BlockingQueue<Got> got = consume(ex[1], "#");

        kit.channel()
                .basicPublish(
                        ex[0],
                        "k",
                        new AMQP.BasicProperties.Builder()
                                .messageId("bad-1")
                                .headers(Map.of("x-delay", "soon"))
                                .build(),
                        "x".getBytes(StandardCharsets.UTF_8));
        kit.channel()
                .basicPublish(
                        ex[0],
                        "k",
                        new AMQP.BasicProperties.Builder()
                                .messageId("far-1")
                                .headers(Map.of("x-delay", 7_200_000L))
                                .build(),
                        "y".getBytes(StandardCharsets.UTF_8));
        kit.channel()
                .basicPublish(
                        ex[0],
                        "k",
                        new AMQP.BasicProperties.Builder().messageId("good-1").build(),
                        "z".getBytes(StandardCharsets.UTF_8));

        Got good = got.poll(5, TimeUnit.SECONDS);
        assertThat(good).isNotNull();
        assertThat(good.properties().getMessageId()).isEqualTo("good-1");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(name);
        await().atMost(Duration.ofSeconds(5))
                .until(() -> deadReason(keys, "bad-1") != null && deadReason(keys, "far-1") != null);
        assertThat(deadReason(keys, "bad-1"))
                .isEqualTo("intake " + name + ": x-delay 'soon' (string) is not an integer number of milliseconds");
        assertThat(deadReason(keys, "far-1"))
                .isEqualTo("intake " + name + ": due in 7200000 ms, beyond the intake's max-delay PT1H");
        assertThat(got.poll(500, TimeUnit.MILLISECONDS))
                .as("nothing else delivered")
                .isNull();
    }

    @Test
    void aMessageCancelledByItsMessageIdNeverArrives() throws Exception {
        String name = kit.business("intake-cancel");
        String[] ex = startIntake(name);
        BlockingQueue<Got> got = consume(ex[1], "#");

        for (String id : List.of("keep-1", "cancel-1")) {
            kit.channel()
                    .basicPublish(
                            ex[0],
                            "k",
                            new AMQP.BasicProperties.Builder()
                                    .messageId(id)
                                    .headers(Map.of("x-delay", 1500))
                                    .build(),
                            id.getBytes(StandardCharsets.UTF_8));
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> kit.scheduled(name) == 2);
        assertThat(kit.producer().cancelById(name, "cancel-1")).isTrue();

        Got g = got.poll(6, TimeUnit.SECONDS);
        assertThat(g).isNotNull();
        assertThat(g.properties().getMessageId()).isEqualTo("keep-1");
        assertThat(got.poll(1_500, TimeUnit.MILLISECONDS))
                .as("the cancelled one")
                .isNull();
    }

    @Test
    void aBusinessOfItsOwnKeepsItsExchangeWhileItsIntakeMessagesGoToDeliverTo() throws Exception {
        String name = kit.business("intake-shared");
        String own = kit.exchange("shared-own");
        BlockingQueue<RelayTestKit.Received> ownQueue = kit.consume(kit.queue(own, "due"));
        String deliverTo = "test.intake.out." + name;
        kit.channel().exchangeDeclare(deliverTo, "topic", false, true, null);
        BlockingQueue<Got> got = consume(deliverTo, "#");
        String exchange = "test.intake.in." + name;
        intakeExchanges.add(exchange);
        intakeQueues.add("delay-relay.intake." + name + "-in");
        Map<String, Object> p = RelayTestKit.business(kit.baseProperties(), name, own, "due");
        p.put("relay.intakes." + name + "-in.exchange", exchange);
        p.put("relay.intakes." + name + "-in.deliver-to", deliverTo);
        p.put("relay.intakes." + name + "-in.business", name);
        kit.startRelay(p);
        await().atMost(Duration.ofSeconds(10)).until(() -> consuming(exchange, name + "-in"));

        kit.producer().scheduleAfter(name, "from redis", Duration.ofMillis(300));
        kit.channel()
                .basicPublish(
                        exchange,
                        "intake.key",
                        new AMQP.BasicProperties.Builder()
                                .headers(Map.of("x-delay", 300))
                                .build(),
                        "from amqp".getBytes(StandardCharsets.UTF_8));

        RelayTestKit.Received fromRedis = ownQueue.poll(5, TimeUnit.SECONDS);
        assertThat(fromRedis).isNotNull();
        assertThat(fromRedis.text()).isEqualTo("from redis");
        Got fromAmqp = got.poll(5, TimeUnit.SECONDS);
        assertThat(fromAmqp).isNotNull();
        assertThat(new String(fromAmqp.body(), StandardCharsets.UTF_8)).isEqualTo("from amqp");
        assertThat(fromAmqp.routingKey()).isEqualTo("intake.key");
        assertThat(ownQueue.poll(500, TimeUnit.MILLISECONDS))
                .as("nothing else on the business's exchange")
                .isNull();
        assertThat(got.poll(100, TimeUnit.MILLISECONDS))
                .as("nothing else on deliver-to")
                .isNull();
    }

    @Test
    void aRefreshStartsANewIntakeWithItsBusinessAndStopsARemovedOne() throws Exception {
        String name = kit.business("intake-reload");
        String second = name + "-b";
        String deliverTo = "test.intake.out." + name;
        kit.channel().exchangeDeclare(deliverTo, "topic", false, true, null);
        BlockingQueue<Got> got = consume(deliverTo, "#");
        String first = "test.intake.in." + name;
        String secondExchange = "test.intake.in." + second;
        intakeExchanges.addAll(List.of(first, secondExchange));
        intakeQueues.addAll(List.of("delay-relay.intake." + name, "delay-relay.intake." + second));
        Path file = Files.createTempFile("intakes", ".yaml");
        Files.writeString(file, intakeYaml(Map.of(name, first), deliverTo));
        Map<String, Object> p = kit.baseProperties();
        p.put("spring.config.import", "optional:file:" + file.toAbsolutePath());
        ConfigurableApplicationContext context = kit.startRelay(p);
        await().atMost(Duration.ofSeconds(10)).until(() -> consuming(first, name));

        Files.writeString(file, intakeYaml(Map.of(second, secondExchange), deliverTo));
        context.publishEvent(new RefreshEvent(context, null, "intakes changed"));

        await().atMost(Duration.ofSeconds(10)).until(() -> consuming(secondExchange, second));
        await().atMost(Duration.ofSeconds(10)).until(() -> consumers("delay-relay.intake." + name) == 0);
        kit.channel()
                .basicPublish(
                        secondExchange,
                        "k",
                        new AMQP.BasicProperties.Builder()
                                .messageId("after-reload")
                                .headers(Map.of("x-delay", 200))
                                .build(),
                        "b".getBytes(StandardCharsets.UTF_8));
        Got g = got.poll(10, TimeUnit.SECONDS);
        assertThat(g).as("delivered by the new intake's business").isNotNull();
        assertThat(g.properties().getMessageId()).isEqualTo("after-reload");
        assertThat(g.properties().getHeaders().get(RelayHeaders.BUSINESS)).hasToString(second);
        Files.delete(file);
    }

    private static String intakeYaml(Map<String, String> exchangeByIntake, String deliverTo) {
        StringBuilder yaml = new StringBuilder("relay:\n  intakes:\n");
        exchangeByIntake.forEach((intake, exchange) -> yaml.append("    ")
                .append(intake)
                .append(":\n      exchange: ")
                .append(exchange)
                .append("\n      deliver-to: ")
                .append(deliverTo)
                .append('\n'));
        return yaml.toString();
    }

    private static int consumers(String queue) {
        try (RelayTestKit probe = new RelayTestKit()) {
            return probe.channel().queueDeclarePassive(queue).getConsumerCount();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private String deadReason(DelayQueueKeys keys, String id) {
        try (RedisConnection c = kit.redis()) {
            for (int shard = 0; shard < 16; shard++) {
                byte[] reason = c.hashCommands()
                        .hGet(
                                keys.deadReasons(shard).getBytes(StandardCharsets.UTF_8),
                                id.getBytes(StandardCharsets.UTF_8));
                if (reason != null) {
                    return new String(reason, StandardCharsets.UTF_8);
                }
            }
        }
        return null;
    }
}
