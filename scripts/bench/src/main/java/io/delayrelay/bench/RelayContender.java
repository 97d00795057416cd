package io.delayrelay.bench;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.DelayRelayApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/** The relay, started in-process like a user's Spring Boot app, configured only through relay.* properties. */
final class RelayContender implements Contender {

    private final Infra infra;
    private final String label;
    private final String business;
    private final String exchange;
    private final Map<String, Object> settings;
    private ConfigurableApplicationContext context;
    private LettuceConnectionFactory producerFactory;
    private volatile RedisDelayedMessageProducer producer;

    /** @param settings extra relay.businesses.&lt;name&gt;.* settings, e.g. threads, batch-size (empty = defaults) */
    RelayContender(Infra infra, String label, String exchange, Map<String, Object> settings) {
        this.infra = infra;
        this.label = label;
        this.business = infra.name("relay");
        this.exchange = exchange;
        this.settings = settings;
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
        String[] args = properties.entrySet().stream().map(e -> "--" + e.getKey() + "=" + e.getValue())
                .toArray(String[]::new);
        return new SpringApplicationBuilder(DelayRelayApplication.class)
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
        context = startRelay(p);
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
        producer.schedule(business, body, Instant.ofEpochMilli(dueMs));
    }

    @Override
    public void close() {
        if (context != null) {
            context.close();
            context = null;
        }
        if (producerFactory != null) {
            producerFactory.destroy();
            producerFactory = null;
            producer = null;
        }
    }
}
