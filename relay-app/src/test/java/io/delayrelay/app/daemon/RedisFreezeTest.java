package io.delayrelay.app.daemon;

import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.DelayRelayApplication;
import io.delayrelay.app.faults.Shell;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 24 ("Not verified here" of the operations review): Lettuce's default command timeout is 60 s, longer than
 * the 30 s lease, so a Redis that stops answering without closing the connection (a dropped network, a frozen
 * server) hung every worker for a minute. With the daemon's defaults ({@code delay-relay.yaml}: timeout 5s) a
 * SIGSTOPped redis-server fails the workers' iterations within the timeout, counted and logged; after SIGCONT the
 * relay carries on and every message arrives.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisFreezeTest {

    private static final int MESSAGES = 100;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aFrozenRedisFailsTheWorkersWithinTheDaemonsTimeoutAndNothingIsLost(CapturedOutput output) throws Exception {
        String business = kit.business("freeze");
        String exchange = kit.exchange("freeze");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        try (PrivateRedis redis = PrivateRedis.start("")) {
            int port = redis.port();
            String pid = Long.toString(redis.pid());
            // the daemon's own defaults (delay-relay.yaml), pointed at the private server by its RELAY_* placeholders
            Map<String, Object> props = new LinkedHashMap<>();
            props.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
            props.put("spring.main.banner-mode", "off");
            props.put("RELAY_REDIS_HOST", "127.0.0.1");
            props.put("RELAY_REDIS_PORT", port);
            props.put("RELAY_RABBIT_HOST", TestServices.rabbit().host());
            props.put("RELAY_RABBIT_PORT", TestServices.rabbit().port());
            props.put("relay.wake.keyspace-events", "off");
            RelayTestKit.business(
                    props, business, exchange, "due", "threads", 2, "publish-timeout", "2s", "lease", "4s");
            ConfigurableApplicationContext relay = kit.startRelay(props);
            assertThat(relay.getEnvironment().getProperty("spring.data.redis.timeout"))
                    .isEqualTo("5s");

            LettuceConnectionFactory producerRedis =
                    new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
            producerRedis.afterPropertiesSet();
            producerRedis.start();
            try {
                RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(producerRedis);
                long now = redis.nowMs();
                for (int i = 0; i < MESSAGES; i++) {
                    producer.schedule(business, "m" + i, Instant.ofEpochMilli(now + 500 + i * 60L));
                }
            } finally {
                producerRedis.destroy();
            }
            List<Received> before = RelayTestKit.collect(received, 10, Duration.ofSeconds(10), Duration.ZERO);
            assertThat(before).hasSizeGreaterThanOrEqualTo(10);

            MeterRegistry registry = relay.getBean(MeterRegistry.class);
            double errorsBefore = errors(registry, business);
            long frozenAt = System.nanoTime();
            Duration failedAfter;
            Shell.run(5, "kill", "-STOP", pid);
            try {
                await().atMost(Duration.ofSeconds(15))
                        .until(() -> output.getOut().contains("business=" + business)
                                && output.getOut()
                                        .contains("worker iteration failed (1 in a row): "
                                                + "RedisCommandTimeoutException: Command timed out after 5 second(s)"));
                failedAfter = Duration.ofNanos(System.nanoTime() - frozenAt);
                assertThat(failedAfter)
                        .as("an iteration fails within the 5 s timeout (plus margin), not 60 s")
                        .isBetween(Duration.ofSeconds(4), Duration.ofSeconds(12));
                await().atMost(Duration.ofSeconds(5)).until(() -> errors(registry, business) > errorsBefore);
            } finally {
                Shell.run(5, "kill", "-CONT", pid);
            }

            List<Received> after = RelayTestKit.collect(
                    received, MESSAGES - before.size(), Duration.ofSeconds(30), Duration.ofSeconds(1));
            Set<String> texts = new HashSet<>();
            before.forEach(r -> texts.add(r.text()));
            after.forEach(r -> texts.add(r.text()));
            Set<String> expected = new HashSet<>();
            for (int i = 0; i < MESSAGES; i++) {
                expected.add("m" + i);
            }
            assertThat(texts).as("every message arrives after SIGCONT").isEqualTo(expected);
            System.out.println("RedisFreezeTest: " + (before.size() + after.size()) + " deliveries of " + MESSAGES
                    + " messages, first iteration failed " + failedAfter.toMillis() + " ms after SIGSTOP");
            relay.close();
        }
    }

    private static double errors(MeterRegistry registry, String business) {
        return registry.get(RelayMeterNames.ERRORS)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .counter()
                .count();
    }
}
