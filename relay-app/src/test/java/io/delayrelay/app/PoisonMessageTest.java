package io.delayrelay.app;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.BusinessState;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import io.delayrelay.app.trigger.DueMessage;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A message that cannot be published (issue 11, defect 3) goes to the dead set with its reason, at once when the
 * error is deterministic, after max-attempts otherwise; its batch-mates are delivered once each, and the worker
 * does not back off (no worker error is counted). Every test puts the poison between two good messages of one
 * shard, scheduled before the relay starts, so they leave in one batch.
 */
class PoisonMessageTest {

    private static final String POISON = "poison";

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    /** Routes every message normally except the poison, for which it breaks the way the test asks. */
    static class PoisonTrigger extends AbstractDelayedMsgScanTrigger {
        private final Environment env;

        PoisonTrigger(Environment env) {
            this.env = env;
        }

        @Override
        public String getBusiness() {
            return env.getProperty("test.business");
        }

        @Override
        public String routingKey(DueMessage message, String configured) {
            if (isPoison(message) && "long-routing-key".equals(env.getProperty("test.poison"))) {
                return "k".repeat(300);
            }
            return configured;
        }

        @Override
        public Message toAmqpMessage(DueMessage message, MessageProperties properties) {
            if (isPoison(message) && "throws".equals(env.getProperty("test.poison"))) {
                throw new IllegalStateException("no template for this message");
            }
            return super.toAmqpMessage(message, properties);
        }

        private static boolean isPoison(DueMessage message) {
            return message.bodyAsString().startsWith(POISON);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class PoisonConfig {
        @Bean
        PoisonTrigger poisonTrigger(Environment env) {
            return new PoisonTrigger(env);
        }
    }

    @Test
    void aRoutingKeyOver255BytesIsDeadLetteredAtOnceWhileItsBatchMatesArrive() throws Exception {
        Fixture f = start("longkey", "long-routing-key", false);

        f.deliveredOnceEach("before", "after");
        String reason = f.awaitDeadReason(POISON);
        assertThat(reason)
                .contains("routing key of 300 bytes exceeds AMQP's 255")
                .endsWith("(attempts: 1)");
        f.assertSettledWithoutWorkerErrors();
        assertThat(f.deadLettered("invalid-message")).isEqualTo(1.0);
    }

    @Test
    void aTriggerThatThrowsForOneMessageDeadLettersItAfterMaxAttemptsWhileItsBatchMatesArrive() throws Exception {
        Fixture f = start("throws", "throws", false);

        f.deliveredOnceEach("before", "after");
        String reason = f.awaitDeadReason(POISON);
        assertThat(reason)
                .contains("IllegalStateException: no template for this message")
                .endsWith("(attempts: 3)");
        f.assertSettledWithoutWorkerErrors();
        assertThat(f.deadLettered("max-attempts")).isEqualTo(1.0);
        assertThat(f.publishFailures("message-build-failed")).isEqualTo(3.0);
    }

    @Test
    void headersTooBigForTheFrameAreDeadLetteredAtOnceAndLaterConfirmsStayWithTheirMessages() throws Exception {
        // The id travels in the x-delay-id header: 200 KB of it exceeds RabbitMQ's 128 KB frame. amqp-client
        // refuses it after advancing the channel's publish sequence number; "after" is published next, and must
        // be confirmed as itself (the relay moves to a fresh channel), not left waiting or acked in its stead.
        Fixture f = start("bigheader", "none", true);

        f.deliveredOnceEach("before", "after");
        String reason = f.awaitDeadReason(f.poisonMember);
        assertThat(reason).contains("Content headers exceeded max frame size").endsWith("(attempts: 1)");
        f.assertSettledWithoutWorkerErrors();
        assertThat(f.publishFailures("confirm-timeout")).isZero();

        kit.producer().scheduleById(f.business, "later", "later", Instant.now().minusSeconds(1));
        assertThat(RelayTestKit.collect(f.received, 1, Duration.ofSeconds(10), Duration.ofMillis(300)))
                .extracting(Received::text)
                .containsExactly("later");
    }

    private Fixture start(String prefix, String poisonKind, boolean byId) {
        String business = kit.business(prefix);
        String exchange = kit.exchange(prefix);
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        // One shard (recorded in K:meta, which the producer follows); paused by the operator while the entries
        // are scheduled, then resumed: they leave in one batch.
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "shards",
                1,
                "threads",
                1,
                "max-attempts",
                3,
                "retry-delay",
                "100ms");
        props.put("test.business", business);
        props.put("test.poison", poisonKind);
        ConfigurableApplicationContext relay = kit.startRelay(props, PoisonConfig.class);
        BusinessState state =
                relay.getBean(RelayEngine.class).relays().get(business).state();
        state.setOperatorPaused(true);
        Instant past = Instant.now().minusSeconds(10);
        String poisonMember;
        if (byId) {
            poisonMember = "i".repeat(200_000);
            kit.producer().scheduleById(business, "before", "before", past);
            kit.producer().scheduleById(business, poisonMember, POISON, past.plusMillis(1));
            kit.producer().scheduleById(business, "after", "after", past.plusMillis(2));
        } else {
            poisonMember = POISON;
            kit.producer().schedule(business, "before", past);
            kit.producer().schedule(business, POISON, past.plusMillis(1));
            kit.producer().schedule(business, "after", past.plusMillis(2));
        }
        state.setOperatorPaused(false);
        return new Fixture(business, poisonMember, received, relay.getBean(MeterRegistry.class));
    }

    private final class Fixture {
        final String business;
        final String poisonMember;
        final BlockingQueue<Received> received;
        final MeterRegistry registry;
        final DelayQueueKeys keys;

        Fixture(String business, String poisonMember, BlockingQueue<Received> received, MeterRegistry registry) {
            this.business = business;
            this.poisonMember = poisonMember;
            this.received = received;
            this.registry = registry;
            this.keys = DelayQueueKeys.forBusiness(business);
        }

        /** Asserts each text arrived once, in this order, none early, nothing else. */
        void deliveredOnceEach(String... texts) throws InterruptedException {
            List<Received> all = Deliveries.expect(texts)
                    .check(received, Duration.ofSeconds(10))
                    .all();
            assertThat(all).extracting(Received::text).containsExactly(texts);
        }

        String awaitDeadReason(String member) {
            byte[] m = member.getBytes(StandardCharsets.UTF_8);
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                try (RedisConnection c = kit.redis()) {
                    return c.zSetCommands().zScore(bytes(keys.dead(0)), m) != null;
                }
            });
            try (RedisConnection c = kit.redis()) {
                return new String(c.hashCommands().hGet(bytes(keys.deadReasons(0)), m), StandardCharsets.UTF_8);
            }
        }

        void assertSettledWithoutWorkerErrors() {
            await().atMost(Duration.ofSeconds(5)).until(() -> kit.countAll(business, "inflight") == 0);
            assertThat(kit.scheduled(business)).as("nothing left scheduled").isZero();
            Counter errors = registry.find(RelayMeterNames.ERRORS)
                    .tag(RelayMeterNames.TAG_BUSINESS, business)
                    .counter();
            assertThat(errors == null ? 0.0 : errors.count())
                    .as("worker errors (a back-off would count one)")
                    .isZero();
            assertThat(publishFailures("send-failed"))
                    .as("nothing treated as a broker outage")
                    .isZero();
        }

        double deadLettered(String reason) {
            Counter c = registry.find(RelayMeterNames.DEAD_LETTERED)
                    .tag(RelayMeterNames.TAG_BUSINESS, business)
                    .tag(RelayMeterNames.TAG_REASON, reason)
                    .counter();
            return c == null ? 0.0 : c.count();
        }

        double publishFailures(String cause) {
            Counter c = registry.find(RelayMeterNames.PUBLISH_FAILURES)
                    .tag(RelayMeterNames.TAG_BUSINESS, business)
                    .tag(RelayMeterNames.TAG_CAUSE, cause)
                    .counter();
            return c == null ? 0.0 : c.count();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
