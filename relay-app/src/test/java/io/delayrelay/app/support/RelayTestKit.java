package io.delayrelay.app.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.LongString;
import io.delayrelay.api.RedisDelayedMessageProducer;
import org.awaitility.Awaitility;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.connection.zset.Tuple;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.ScanOptions;

/**
 * Per-test kit: unique business names, exchanges and queues on the real broker, a raw Redis connection, relay
 * contexts started like a user's app, and cleanup of everything it made.
 */
public final class RelayTestKit implements AutoCloseable {

    /** A message as a consumer saw it. */
    public record Received(byte[] body, Map<String, Object> headers, String messageId, long receivedAtMs) {
        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        public long header(String name) {
            return ((Number) headers.get(name)).longValue();
        }
    }

    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private final List<String> businesses = new ArrayList<>();
    private final List<String> exchanges = new ArrayList<>();
    private final List<String> queues = new ArrayList<>();
    private final List<ConfigurableApplicationContext> contexts = new CopyOnWriteArrayList<>();
    private final LettuceConnectionFactory redisFactory;
    private final Connection amqp;
    private final Channel channel;

    /** The Redis the kit and the relays it starts use: the shared one, or a private one of the test. */
    private final TestServices.Endpoint redisEndpoint;

    /** A kit on the shared Redis and RabbitMQ. */
    public RelayTestKit() {
        this(TestServices.redis());
    }

    /**
     * A kit whose relays and Redis connections use {@code redis} (e.g. a {@link PrivateRedis} with settings of the
     * test's own), and the shared RabbitMQ.
     */
    public RelayTestKit(TestServices.Endpoint redis) {
        redisEndpoint = redis;
        TestServices.Endpoint r = redis;
        redisFactory = new LettuceConnectionFactory(new RedisStandaloneConfiguration(r.host(), r.port()));
        redisFactory.afterPropertiesSet();
        redisFactory.start();
        TestServices.Endpoint q = TestServices.rabbit();
        ConnectionFactory cf = new ConnectionFactory();
        cf.setHost(q.host());
        cf.setPort(q.port());
        try {
            amqp = cf.newConnection("relay-test-kit");
            channel = amqp.createChannel();
        } catch (Exception e) {
            throw new IllegalStateException("cannot connect to RabbitMQ at " + q, e);
        }
    }

    /** A fresh business name, registered for cleanup. */
    public String business(String prefix) {
        String name = prefix + "-" + run + "-" + businesses.size();
        businesses.add(name);
        return name;
    }

    /** Declares a fresh direct exchange (kept for cleanup). */
    public String exchange(String prefix) {
        String name = "test." + prefix + "." + run + "." + exchanges.size();
        try {
            channel.exchangeDeclare(name, "direct", false, false, null);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        exchanges.add(name);
        return name;
    }

    /** Declares a fresh queue bound to the exchange with the routing key. */
    public String queue(String exchange, String routingKey) {
        String name = "test.q." + run + "." + queues.size();
        try {
            channel.queueDeclare(name, false, false, false, null);
            channel.queueBind(name, exchange, routingKey);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        queues.add(name);
        return name;
    }

    /** Starts consuming a queue; every message lands in the returned queue with its arrival time. */
    public BlockingQueue<Received> consume(String queue) {
        BlockingQueue<Received> received = new LinkedBlockingQueue<>();
        try {
            Channel consumerChannel = amqp.createChannel();
            consumerChannel.basicConsume(queue, true, new DefaultConsumer(consumerChannel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                    Map<String, Object> headers = new HashMap<>();
                    if (props.getHeaders() != null) {
                        props.getHeaders().forEach((k, v) -> headers.put(k, v == null ? null : normalize(v)));
                    }
                    received.add(new Received(body, headers, props.getMessageId(), System.currentTimeMillis()));
                }
            });
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return received;
    }

    private static Object normalize(Object v) {
        return v instanceof LongString ls ? ls.toString() : v;
    }

    /**
     * Takes messages until {@code expected} arrived or {@code timeout} passed, then keeps listening for
     * {@code quiet} to catch any extra (duplicate) delivery. Returns all of them.
     */
    public static List<Received> collect(BlockingQueue<Received> queue, int expected, Duration timeout, Duration quiet)
            throws InterruptedException {
        List<Received> all = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (all.size() < expected && System.nanoTime() < deadline) {
            Received r = queue.poll(100, TimeUnit.MILLISECONDS);
            if (r != null) {
                all.add(r);
            }
        }
        long quietUntil = System.nanoTime() + quiet.toNanos();
        while (System.nanoTime() < quietUntil) {
            Received r = queue.poll(50, TimeUnit.MILLISECONDS);
            if (r != null) {
                all.add(r);
            }
        }
        return all;
    }

    public Channel channel() {
        return channel;
    }

    public LettuceConnectionFactory redisFactory() {
        return redisFactory;
    }

    public RedisConnection redis() {
        return redisFactory.getConnection();
    }

    /** A producer client on the test Redis, default keys. */
    public RedisDelayedMessageProducer producer() {
        return RedisDelayedMessageProducer.withDefaultKeys(redisFactory);
    }

    /** Base properties pointing a relay context at the test services. */
    public Map<String, Object> baseProperties() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.data.redis.host", redisEndpoint.host());
        p.put("spring.data.redis.port", redisEndpoint.port());
        p.put("spring.rabbitmq.host", TestServices.rabbit().host());
        p.put("spring.rabbitmq.port", TestServices.rabbit().port());
        p.put("spring.main.banner-mode", "off");
        p.put("relay.reaper-interval", "500ms");
        return p;
    }

    /** A declared business's properties: exchange and routing key, plus extra settings. */
    public static Map<String, Object> business(
            Map<String, Object> into, String name, String exchange, String routingKey, Object... more) {
        String prefix = "relay.businesses." + name + ".";
        into.put(prefix + "exchange", exchange);
        into.put(prefix + "routing-key", routingKey);
        for (int i = 0; i < more.length; i += 2) {
            into.put(prefix + more[i], more[i + 1]);
        }
        return into;
    }

    /** Starts a relay app (non-web) with the given properties and extra configuration classes. */
    public ConfigurableApplicationContext startRelay(Map<String, Object> properties, Class<?>... sources) {
        Class<?>[] all = new Class<?>[sources.length + 1];
        all[0] = TestRelayApplication.class;
        System.arraycopy(sources, 0, all, 1, sources.length);
        ConfigurableApplicationContext context = new SpringApplicationBuilder(all)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run();
        contexts.add(context);
        return context;
    }

    /** Redis time now, epoch ms. */
    public long redisNowMs() {
        try (RedisConnection c = redis()) {
            return c.serverCommands().time();
        }
    }

    /** Every key of a business (its shards, payloads, in-flight, meta...). */
    public Set<String> keysOf(String business) {
        Set<String> keys = new TreeSet<>();
        try (RedisConnection c = redis()) {
            for (String pattern : List.of("delayqueue:" + business + ":*", "{delayqueue:" + business + ":*")) {
                try (Cursor<byte[]> cursor = c.keyCommands()
                        .scan(ScanOptions.scanOptions()
                                .match(pattern)
                                .count(1000)
                                .build())) {
                    cursor.forEachRemaining(k -> keys.add(new String(k, StandardCharsets.UTF_8)));
                }
            }
        }
        return keys;
    }

    /** Total members of a zset-typed key pattern of a business: e.g. "inflight" sums every {K:i}:inflight. */
    public long countAll(String business, String suffix) {
        long total = 0;
        try (RedisConnection c = redis()) {
            for (String key : keysOf(business)) {
                if (key.endsWith("}:" + suffix)) {
                    Long n = c.zSetCommands().zCard(key.getBytes(StandardCharsets.UTF_8));
                    total += n == null ? 0 : n;
                }
            }
        }
        return total;
    }

    /**
     * The latest score in the business's {@code {K:i}:inflight} sets (a lease deadline, or the retry time of a
     * delivery put back after a failure; retry delays double per failed attempt), epoch ms; 0 when they are empty.
     */
    public long latestInflightScoreMs(String business) {
        long latest = 0;
        try (RedisConnection c = redis()) {
            for (String key : keysOf(business)) {
                if (key.endsWith("}:inflight")) {
                    Set<Tuple> last = c.zSetCommands().zRangeWithScores(key.getBytes(StandardCharsets.UTF_8), -1, -1);
                    if (last != null && !last.isEmpty()) {
                        latest = Math.max(
                                latest, last.iterator().next().getScore().longValue());
                    }
                }
            }
        }
        return latest;
    }

    /**
     * Waits until the business's {@code {K:i}:inflight} sets are empty: until their latest retry time or lease
     * deadline (read now), plus {@code margin}. A delivery that failed several times waits twice as long after each
     * failure, so a fixed bound would depend on how often it failed.
     */
    public void awaitInflightSettled(String business, Duration margin) {
        long settleBy = Math.max(0, latestInflightScoreMs(business) - redisNowMs());
        Awaitility.await("in-flight deliveries of " + business + " settled (latest retry or lease " + settleBy
                        + " ms ahead, + " + margin.toMillis() + " ms)")
                .atMost(Duration.ofMillis(settleBy).plus(margin))
                .until(() -> countAll(business, "inflight") == 0);
    }

    /** Members scheduled in the shard zsets of a business. */
    public long scheduled(String business) {
        long total = 0;
        try (RedisConnection c = redis()) {
            for (String key : keysOf(business)) {
                if (key.matches("delayqueue:.*:[0-9]+")) {
                    Long n = c.zSetCommands().zCard(key.getBytes(StandardCharsets.UTF_8));
                    total += n == null ? 0 : n;
                }
            }
        }
        return total;
    }

    @Override
    public void close() {
        for (ConfigurableApplicationContext context : contexts) {
            try {
                context.close();
            } catch (RuntimeException ignored) {
                // already closed by the test
            }
        }
        try (RedisConnection c = redis()) {
            for (String business : businesses) {
                for (String key : keysOf(business)) {
                    c.keyCommands().del(key.getBytes(StandardCharsets.UTF_8));
                }
            }
        }
        for (String queue : queues) {
            try {
                channel.queueDelete(queue);
            } catch (IOException | RuntimeException ignored) {
                // best effort
            }
        }
        for (String exchange : exchanges) {
            try {
                channel.exchangeDelete(exchange);
            } catch (IOException | RuntimeException ignored) {
                // best effort
            }
        }
        try {
            amqp.close();
        } catch (IOException | RuntimeException ignored) {
            // best effort
        }
        redisFactory.destroy();
    }
}
