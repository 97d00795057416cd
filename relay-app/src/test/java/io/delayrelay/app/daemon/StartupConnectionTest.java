package io.delayrelay.app.daemon;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.app.config.ServiceAccessFailureAnalyzer;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.ServiceAccessException;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TcpProxy;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.availability.ApplicationAvailability;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

/**
 * Issue 24 (O3, O4 of the operations review): what start-up does when Redis or RabbitMQ is not there or refuses the
 * relay. Refused (wrong password, unknown vhost): start-up fails with one report naming server, user and what to
 * check. Not reachable: the process stays up and not Ready, a WARN names the server, and it relays once the
 * server is there.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupConnectionTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aWrongRedisPasswordStopsStartUpWithOneReportNamingServerAndUser() {
        try (PrivateRedis redis = PrivateRedis.builder()
                .args("--requirepass", "right-Secret-31")
                .cliArgs("-a", "right-Secret-31", "--no-auth-warning")
                .start()) {
            String business = kit.business("redisauth");
            Map<String, Object> props =
                    RelayTestKit.business(kit.baseProperties(), business, kit.exchange("redisauth"), "rk");
            props.put("spring.data.redis.port", redis.port());
            props.put("spring.data.redis.password", "wrong-Secret-13");

            FailureAnalysis analysis = analyze(catchThrowable(() -> kit.startRelay(props)));

            assertThat(analysis.getDescription())
                    .startsWith("Redis at 127.0.0.1:" + redis.port() + " as user 'default' refused the relay: ")
                    .contains("WRONGPASS")
                    .doesNotContain("wrong-Secret-13");
            assertThat(analysis.getAction())
                    .startsWith("Check spring.data.redis.username and spring.data.redis.password");
        }
    }

    @Test
    void aWrongRabbitPasswordStopsStartUpWithOneReport() {
        String business = kit.business("rabbitauth");
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, kit.exchange("rabbitauth"), "rk");
        props.put("spring.rabbitmq.username", "guest");
        props.put("spring.rabbitmq.password", "not-the-password");

        FailureAnalysis analysis = analyze(catchThrowable(() -> kit.startRelay(props)));

        assertThat(analysis.getDescription())
                .startsWith("RabbitMQ at " + TestServices.rabbit().host() + ":"
                        + TestServices.rabbit().port() + " (vhost '/') as user 'guest' refused the relay: ")
                .contains("ACCESS_REFUSED")
                .doesNotContain("not-the-password");
        assertThat(analysis.getAction()).startsWith("Check spring.rabbitmq.username and spring.rabbitmq.password");
    }

    @Test
    void anUnknownRabbitVirtualHostStopsStartUpWithOneReport() {
        String business = kit.business("vhost");
        Map<String, Object> props = RelayTestKit.business(kit.baseProperties(), business, kit.exchange("vhost"), "rk");
        props.put("spring.rabbitmq.virtual-host", "no-such-vhost-" + business);

        FailureAnalysis analysis = analyze(catchThrowable(() -> kit.startRelay(props)));

        assertThat(analysis.getDescription())
                .startsWith("RabbitMQ at " + TestServices.rabbit().host() + ":"
                        + TestServices.rabbit().port() + " (vhost 'no-such-vhost-" + business
                        + "') as user 'guest' refused the relay: ")
                .contains("NOT_ALLOWED");
        assertThat(analysis.getAction()).contains("spring.rabbitmq.virtual-host: the virtual host must exist");
    }

    @Test
    void anUnreachableRedisAtStartKeepsTheRelayUpAndNotReadyUntilItAnswers(CapturedOutput output) throws Exception {
        int port = FreePort.next();
        RedisOnPort setup = redisOnPort("noredis", port, "300ms");

        ConfigurableApplicationContext relay = kit.startRelay(setup.props());
        ApplicationAvailability availability = relay.getBean(ApplicationAvailability.class);
        RelayEngine engine = relay.getBean(RelayEngine.class);
        await().atMost(Duration.ofSeconds(5))
                .until(() -> output.getOut()
                                .split("Redis at 127.0.0.1:" + port + " as user 'default' is not" + " reachable", -1)
                                .length
                        > 2);
        assertThat(engine.isRunning()).isFalse();
        assertThat(availability.getReadinessState()).isEqualTo(ReadinessState.REFUSING_TRAFFIC);

        try (TcpProxy redis = new TcpProxy(port, TestServices.redis().port())) {
            await().atMost(Duration.ofSeconds(5)).until(engine::isRunning);
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> availability.getReadinessState() == ReadinessState.ACCEPTING_TRAFFIC);
            setup.assertRelays("after redis came");
            relay.close();
        }
    }

    /**
     * A connection that fails with neither a network error nor an answer (Lettuce reports a refused AUTH this way
     * when the server's reply and close race its handshake) is asked again at once, not waited on for the retry
     * period. The first two connections are hung up on: the operator-pause read's (which keeps its last state) and
     * the start check's; the relay relays at once with a retry period of 10 minutes.
     */
    @Test
    void aConnectionHungUpOnBeforeAnAnswerIsAskedAgainAtOnce(CapturedOutput output) throws Exception {
        int port = FreePort.next();
        RedisOnPort setup = redisOnPort("hungup", port, "10m");
        try (TcpProxy redis = new TcpProxy(port, TestServices.redis().port())) {
            redis.dropNext(2);
            ConfigurableApplicationContext relay = kit.startRelay(setup.props());
            RelayEngine engine = relay.getBean(RelayEngine.class);
            await().atMost(Duration.ofSeconds(5)).until(engine::isRunning);
            setup.assertRelays("after a hang-up");
            assertThat(output.getOut()).doesNotContain("is not reachable");
            relay.close();
        }
    }

    @Test
    void anUnreachableRabbitAtStartKeepsTheRelayUpAndNotReadyUntilItAnswers(CapturedOutput output) throws Exception {
        int port = FreePort.next();
        String business = kit.business("norabbit");
        String exchange = kit.exchange("norabbit");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> props = RelayTestKit.business(kit.baseProperties(), business, exchange, "due");
        props.put("spring.rabbitmq.host", "127.0.0.1");
        props.put("spring.rabbitmq.port", port);
        props.put("relay.start-retry", "300ms");

        ConfigurableApplicationContext relay = kit.startRelay(props);
        ApplicationAvailability availability = relay.getBean(ApplicationAvailability.class);
        RelayEngine engine = relay.getBean(RelayEngine.class);
        await().atMost(Duration.ofSeconds(5)).until(() -> output.getOut()
                .contains("RabbitMQ at 127.0.0.1:" + port + " (vhost '/') as user 'guest' is not reachable"));
        assertThat(engine.isRunning()).isFalse();
        assertThat(availability.getReadinessState()).isEqualTo(ReadinessState.REFUSING_TRAFFIC);
        kit.producer().scheduleAfter(business, "waited in redis", Duration.ZERO);

        try (TcpProxy rabbit = new TcpProxy(port, TestServices.rabbit().port())) {
            await().atMost(Duration.ofSeconds(10)).until(engine::isRunning);
            assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(300)))
                    .extracting(Received::text)
                    .containsExactly("waited in redis");
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> availability.getReadinessState() == ReadinessState.ACCEPTING_TRAFFIC);
            relay.close();
        }
    }

    private static FailureAnalysis analyze(Throwable failure) {
        assertThat(failure).hasRootCauseInstanceOf(Exception.class);
        FailureAnalysis analysis = new ServiceAccessFailureAnalyzer().analyze(failure);
        assertThat(analysis)
                .as("one report from the relay's failure analyzer for " + failure)
                .isNotNull();
        assertThat(analysis.getCause()).isInstanceOf(ServiceAccessException.class);
        return analysis;
    }

    /** A relay of one new business whose Redis is at 127.0.0.1:{@code port}, and the queue of its exchange. */
    private RedisOnPort redisOnPort(String name, int port, String startRetry) {
        String business = kit.business(name);
        String exchange = kit.exchange(name);
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> props = RelayTestKit.business(kit.baseProperties(), business, exchange, "due");
        props.put("spring.data.redis.port", port);
        props.put("relay.start-retry", startRetry);
        return new RedisOnPort(business, received, props, kit.producer());
    }

    private record RedisOnPort(
            String business,
            BlockingQueue<Received> received,
            Map<String, Object> props,
            io.delayrelay.api.DelayedMessageProducer producer) {

        /** Schedules {@code text} due now (through the shared Redis) and expects exactly it on the queue. */
        void assertRelays(String text) throws InterruptedException {
            producer.scheduleAfter(business, text, Duration.ZERO);
            assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(300)))
                    .extracting(Received::text)
                    .containsExactly(text);
        }
    }
}
