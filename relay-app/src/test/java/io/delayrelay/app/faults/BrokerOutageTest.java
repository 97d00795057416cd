package io.delayrelay.app.faults;

import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.faults.FaultFigures.Collector;
import io.delayrelay.app.faults.FaultFigures.Figures;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Fault 2: RabbitMQ stopped for 30 s ({@code rabbitmqctl stop_app}) while messages keep falling due. */
@Tag("faults")
class BrokerOutageTest {

    static final long OUTAGE_MS = 30_000;
    static final int RATE_PER_SECOND = 100;
    static final long LOAD_MS = 50_000;

    private final RelayTestKit kit = new RelayTestKit();
    private String exchange;
    private String queue;

    @AfterEach
    void cleanUp() throws Exception {
        try {
            if (queue != null) {
                kit.channel().queueDelete(queue);
            }
            if (exchange != null) {
                kit.channel().exchangeDelete(exchange);
            }
        } catch (IOException | RuntimeException e) {
            System.out.println("cleanup of " + queue + "/" + exchange + " failed: " + e);
        } finally {
            kit.close();
        }
    }

    @Test
    void relaySurvivesThirtySecondsWithoutTheBrokerReconnectsAndLosesNothing() throws Exception {
        String business = kit.business("broker-down");
        exchange = "test.faults.broker-down." + business;
        queue = "test.faults.q." + business;
        // Durable topology and persistent messages: what survives a broker restart in production too.
        kit.channel().exchangeDeclare(exchange, "direct", true);
        kit.channel().queueDeclare(queue, true, false, false, null);
        kit.channel().queueBind(queue, exchange, "due");
        Collector received = new Collector(kit.consume(queue));

        Map<String, Object> props = new LinkedHashMap<>();
        props.put("spring.data.redis.host", TestServices.redis().host());
        props.put("spring.data.redis.port", TestServices.redis().port());
        props.put("spring.rabbitmq.host", TestServices.rabbit().host());
        props.put("spring.rabbitmq.port", TestServices.rabbit().port());
        props.put("relay.reaper-interval", "500ms");
        RelayTestKit.business(props, business, exchange, "due", "threads", 2, "publish-timeout", "5s", "lease", "15s");

        List<String> sent = new CopyOnWriteArrayList<>();
        Map<String, Long> due = new ConcurrentHashMap<>();
        AtomicBoolean producing = new AtomicBoolean(true);
        RedisDelayedMessageProducer producer = kit.producer();
        Thread load = new Thread(
                () -> {
                    long start = System.currentTimeMillis();
                    int i = 0;
                    while (producing.get() && System.currentTimeMillis() - start < LOAD_MS) {
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

        try (RelayProcess relay = RelayProcess.start("broker-outage", props)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> relay.started() || !relay.isAlive());
            load.start();
            Thread.sleep(8_000);
            int beforeOutage = received.distinct();
            long cpuBefore;
            long cpuAfter;
            long outageStarted = System.currentTimeMillis();
            try {
                Shell.run(60, "rabbitmqctl", "stop_app");
                cpuBefore = relay.cpuMs();
                Thread.sleep(OUTAGE_MS);
                cpuAfter = relay.cpuMs();
            } finally {
                Shell.run(120, "rabbitmqctl", "start_app");
                Shell.run(120, "rabbitmqctl", "await_startup");
            }
            long restored = System.currentTimeMillis();
            int atRestore = received.distinct();
            assertThat(relay.isAlive())
                    .as("relay survived the outage; see %s", relay.log())
                    .isTrue();
            await().atMost(Duration.ofSeconds(60)).until(() -> received.distinct() > atRestore);
            long reconnectMs = System.currentTimeMillis() - restored;
            load.join();
            received.awaitDistinct(sent.size(), 120_000, 2_000);
            double cpuPercent = 100.0 * (cpuAfter - cpuBefore) / OUTAGE_MS;
            List<Received> all = received.drain();
            Figures f = FaultFigures.of(
                    "2 RabbitMQ down 30 s",
                    sent,
                    due,
                    all,
                    String.format(
                            "deliveredBeforeOutage=%d outageMs=%d relayCpuDuringOutage=%.1f%% firstDeliveryAfterRestoreMs=%d",
                            beforeOutage, restored - outageStarted, cpuPercent, reconnectMs));
            assertThat(f.lost()).as("lost").isZero();
            assertThat(cpuPercent)
                    .as("relay CPU during the outage (%% of one core)")
                    .isLessThan(50.0);
            await().atMost(Duration.ofSeconds(20)).until(() -> kit.countAll(business, "inflight") == 0);
        } finally {
            producing.set(false);
            load.join(5_000);
        }
    }
}
