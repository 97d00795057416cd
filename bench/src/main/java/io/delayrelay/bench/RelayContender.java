package io.delayrelay.bench;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The relay, started in-process like a user's Spring Boot app (one or more instances), configured only through
 * relay.* properties. Its producer is the relay-api (with wake-ups) or a plain ZADD per message (no wake-up).
 */
final class RelayContender implements Contender {

    /**
     * A user's Spring Boot app with the relay on its classpath: the relay comes from its auto-configuration, as it
     * does when embedded, not from the daemon's main class.
     */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class EmbeddingApp {}

    private final Infra infra;
    private final String label;
    private final String business;
    private final String exchange;
    private final Map<String, Object> settings;
    private final DelayQueueKeys keys;
    private final int instances;
    private final boolean plainZadd;
    private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();
    private LettuceConnectionFactory producerFactory;
    private volatile RedisDelayedMessageProducer producer;

    /** @param settings extra relay.businesses.&lt;name&gt;.* settings, e.g. threads, batch-size (empty = defaults) */
    RelayContender(Infra infra, String label, String exchange, Map<String, Object> settings) {
        this(infra, label, exchange, settings, 1, false);
    }

    /**
     * @param instances relay instances (separate Spring contexts, as separate processes would be)
     * @param plainZadd schedule with a bare ZADD into the shard (what a non-Java producer does), no wake-up
     */
    RelayContender(
            Infra infra,
            String label,
            String exchange,
            Map<String, Object> settings,
            int instances,
            boolean plainZadd) {
        this.instances = instances;
        this.plainZadd = plainZadd;
        this.infra = infra;
        this.label = label;
        this.business = infra.name("relay");
        this.exchange = exchange;
        this.settings = settings;
        this.keys = DelayQueueKeys.forBusiness(business);
    }

    static Map<String, Object> baseProperties(Infra infra) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.data.redis.host", infra.config.redisHost());
        p.put("spring.data.redis.port", infra.config.redisPort());
        p.put("spring.rabbitmq.host", infra.config.rabbitHost());
        p.put("spring.rabbitmq.port", infra.config.rabbitPort());
        p.put("spring.main.banner-mode", "off");
        p.put("spring.main.register-shutdown-hook", "false");
        p.put("logging.level.root", "WARN");
        return p;
    }

    /**
     * Starts the relay app. The properties go in as command-line arguments: as default properties
     * ({@code builder.properties(...)}) they would lose to the relay's own application.yaml, which sets
     * spring.data.redis.* and spring.rabbitmq.* from REDIS_HOST/REDIS_PORT/... with 127.0.0.1:6379 defaults.
     */
    static ConfigurableApplicationContext startRelay(Map<String, Object> properties) {
        String[] args = properties.entrySet().stream()
                .map(e -> "--" + e.getKey() + "=" + e.getValue())
                .toArray(String[]::new);
        return new SpringApplicationBuilder(EmbeddingApp.class)
                .web(WebApplicationType.NONE)
                .logStartupInfo(false)
                .run(args);
    }

    String business() {
        return business;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public void start() {
        Map<String, Object> p = baseProperties(infra);
        String prefix = "relay.businesses." + business + ".";
        p.put(prefix + "exchange", exchange);
        p.put(prefix + "routing-key", "due");
        settings.forEach((k, v) -> p.put(prefix + k, v));
        for (int i = 0; i < instances; i++) {
            contexts.add(startRelay(p));
        }
    }

    @Override
    public long load(List<byte[]> bodies, long[] dues) throws Exception {
        return infra.loadShards(DelayQueueKeys.forBusiness(business), infra.config.shards(), bodies, dues);
    }

    @Override
    public double loadRateGuess() {
        return 60_000;
    }

    @Override
    public void schedule(byte[] body, long dueMs) {
        if (producer == null) {
            synchronized (this) {
                if (producer == null) {
                    producerFactory = new LettuceConnectionFactory(
                            new RedisStandaloneConfiguration(infra.config.redisHost(), infra.config.redisPort()));
                    producerFactory.afterPropertiesSet();
                    producerFactory.start();
                    producer = RedisDelayedMessageProducer.withDefaultKeys(producerFactory);
                }
            }
        }
        if (plainZadd) {
            int shard = ShardSelector.shardOf(body, infra.config.shards());
            try (RedisConnection c = producerFactory.getConnection()) {
                c.zSetCommands().zAdd(keys.shard(shard).getBytes(StandardCharsets.UTF_8), dueMs, body);
            }
            return;
        }
        producer.schedule(business, body, Instant.ofEpochMilli(dueMs));
    }

    @Override
    public void close() {
        contexts.forEach(ConfigurableApplicationContext::close);
        contexts.clear();
        if (producerFactory != null) {
            producerFactory.destroy();
            producerFactory = null;
            producer = null;
        }
    }
}
