package io.delayrelay.app.daemon;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.RepositoryRoot;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 26, Done when (a) and (c), against the exec jar as a process: (a) with {@code max-lateness: 2s}, entries
 * already 10 s overdue when the relay starts are dead with reason expired (in the dead sets, the operator's
 * dead-letter view and {@code delay_relay_dead_lettered_total{reason="expired"}}) and never published, while fresh
 * ones arrive on time; (c) the Python producer example (examples/producers/delay.py) sets {@code traceparent},
 * {@code tracestate} and a per-message expiry through the contract, and a Python consumer with pika (Debian
 * python3-pika) reads the headers unchanged; the entry it scheduled already past its expiry is dead, not published.
 */
class LatePolicyIT {

    private static final String TOKEN = "late-policy-it-token-0123456789";
    private static final Duration START = Duration.ofSeconds(150);
    private static final int STALE = 200;
    private static final int FRESH = 50;

    private final RelayTestKit kit = new RelayTestKit();
    private final List<RelayProcess> processes = new ArrayList<>();

    @AfterEach
    void cleanUp() throws InterruptedException {
        for (RelayProcess process : processes) {
            process.close();
        }
        kit.close();
    }

    private RelayProcess start(String business, String exchange, int managementPort, Object... more) throws Exception {
        Map<String, Object> props = RelayTestKit.business(kit.baseProperties(), business, exchange, "due", more);
        props.put("server.port", FreePort.next());
        props.put("management.server.port", managementPort);
        props.put("relay.ops.token", TOKEN);
        RelayProcess process = RelayProcess.startJar("late-" + business, props, true, RelayProcess.C1);
        processes.add(process);
        OpsClient ops = new OpsClient(managementPort, TOKEN);
        await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
            if (!process.isAlive()) {
                throw new AssertionError("relay exited:\n" + process.output());
            }
            return process.started() && ops.get("/actuator/health/readiness") != null;
        });
        return process;
    }

    @Test
    void entriesTenSecondsOverdueAtStartAreDeadWithReasonExpiredAndFreshOnesArriveOnTime() throws Exception {
        String business = kit.business("late-a");
        String exchange = kit.exchange("late-a");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        long now = kit.redisNowMs();
        for (int i = 0; i < STALE; i++) {
            if (i % 2 == 0) {
                kit.producer().schedule(business, "stale-" + i, Instant.ofEpochMilli(now - 10_000));
            } else {
                kit.producer()
                        .scheduleById(business, "stale-" + i, "stale by id " + i, Instant.ofEpochMilli(now - 10_000));
            }
        }
        int management = FreePort.next();
        RelayProcess relay = start(business, exchange, management, "max-lateness", "2s", "shards", 4);
        OpsClient ops = new OpsClient(management, TOKEN);

        long freshFrom = kit.redisNowMs();
        List<String> fresh = new ArrayList<>();
        for (int i = 0; i < FRESH; i++) {
            kit.producer().scheduleAfter(business, "fresh-" + i, Duration.ofMillis(500 + 10L * i));
            fresh.add("fresh-" + i);
        }
        // every fresh one once, none early, no stale one (an unexpected body)
        List<Received> all = Deliveries.expect(fresh)
                .quiet(Duration.ofSeconds(2))
                .check(received, Duration.ofSeconds(30))
                .all();
        long worst = 0;
        long worstStamp = 0;
        for (Received r : all) {
            long due = r.header(RelayHeaders.DUE_AT);
            assertThat(due).isGreaterThanOrEqualTo(freshFrom + 500);
            assertThat(r.header(RelayHeaders.RELAYED_AT)).as("never early").isGreaterThanOrEqualTo(due);
            worst = Math.max(worst, r.receivedAtMs() - due);
            worstStamp = Math.max(worstStamp, r.header(RelayHeaders.RELAYED_AT) - due);
        }
        System.out.printf(
                "FIGURE late policy (a): %d stale entries dead at start, %d fresh delivered, worst pop lag"
                        + " (x-delay-relayed-at - due) %d ms, worst arrival lag %d ms%n",
                STALE, all.size(), worstStamp, worst);
        // on time: well inside max-lateness (2 s), with margin for a loaded machine and a cold JVM (C1 only)
        assertThat(worstStamp).as("popped on time").isLessThan(1_000);
        assertThat(worst).as("arrived on time").isLessThan(2_000);

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        await().atMost(Duration.ofSeconds(10)).until(() -> kit.countAll(business, "dead") == STALE);
        try (RedisConnection c = kit.redis()) {
            for (int shard = 0; shard < 4; shard++) {
                for (byte[] reason : c.hashCommands().hVals(DelayQueueKeys.bytes(keys.deadReasons(shard)))) {
                    assertThat(new String(reason, StandardCharsets.UTF_8))
                            .matches("expired: \\d+ ms late, max-lateness 2000 ms \\(due: " + (now - 10_000)
                                    + "\\) \\(attempts: 0\\)");
                }
            }
        }
        JsonNode dead = ops.getAsOperator("/actuator/relay/" + business + "/dead?limit=500");
        assertThat(dead).as("the operator's dead-letter view").isNotNull();
        assertThat(dead.toString()).contains("expired: ").contains("stale-1");
        String metric =
                "delay_relay_dead_lettered_total{business=\"" + business + "\",reason=\"expired\"} " + STALE + ".0";
        await().atMost(Duration.ofSeconds(10))
                .until(() -> ops.text("/actuator/prometheus").contains(metric));
        assertThat(relay.output()).contains("late message(s) dead-lettered to");
    }

    @Test
    void aPythonProducerSetsTraceparentAndAnExpiryAndAPikaConsumerReadsTheHeadersUnchanged() throws Exception {
        String business = kit.business("late-c");
        String exchange = kit.exchange("late-c");
        String queue = kit.queue(exchange, "due");
        int management = FreePort.next();
        start(business, exchange, management, "shards", 4);
        OpsClient ops = new OpsClient(management, TOKEN);
        Path root = RepositoryRoot.path();
        String k = DelayQueueKeys.forBusiness(business).sourceKey();
        String traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        String tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

        Process probe = new ProcessBuilder("/usr/bin/python3", "-c", "import pika").start();
        assertThat(probe.waitFor(30, TimeUnit.SECONDS) && probe.exitValue() == 0)
                .as("Python's pika package is missing for the consumer of this test: apt-get install python3-pika"
                        + " (scripts/test.sh installs it when run as root)")
                .isTrue();
        Process consumer = python(root, "-c", PIKA_CONSUMER, queue);
        // the consumer is ready once it printed "ready"
        String ready = new String(consumer.getInputStream().readNBytes(6), StandardCharsets.UTF_8);
        assertThat(ready).isEqualTo("ready\n");
        run(
                root,
                "examples/producers/delay.py",
                "schedule_by_id",
                k,
                "order-7",
                "{\"order\":7}",
                "300",
                "+60000",
                "traceparent",
                traceparent,
                "tracestate",
                tracestate,
                "tenant",
                "acme");
        // already past its expiry when it falls due: due 5 s ago, expiry 1 s after that
        run(
                root,
                "examples/producers/delay.py",
                "schedule_by_id",
                k,
                "code-8",
                "one-time code",
                "-5000",
                "+1000",
                "traceparent",
                traceparent);

        assertThat(consumer.waitFor(60, TimeUnit.SECONDS))
                .as("the pika consumer got its message")
                .isTrue();
        String out = new String(consumer.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(consumer.exitValue()).as(out).isZero();
        assertThat(out.lines().toList())
                .contains(
                        "body={\"order\":7}",
                        "traceparent=" + traceparent,
                        "tracestate=" + tracestate,
                        "tenant=acme",
                        RelayHeaders.ID + "=order-7",
                        RelayHeaders.BUSINESS + "=" + business);
        JsonNode dead = ops.getAsOperator("/actuator/relay/" + business + "/dead?limit=10");
        assertThat(dead).isNotNull();
        assertThat(dead.toString()).contains("code-8").contains("expired: past its expiry");
        assertThat(kit.countAll(business, "dead")).isEqualTo(1);
    }

    /** Consumes one message of the queue named by argv[1] with pika and prints its body and headers, one a line. */
    private static final String PIKA_CONSUMER = String.join(
            "\n",
            "import sys, pika",
            "conn = pika.BlockingConnection(pika.ConnectionParameters(host=sys.argv[2], port=int(sys.argv[3])))",
            "ch = conn.channel()",
            "print('ready', flush=True)",
            "for method, props, body in ch.consume(sys.argv[1], auto_ack=True, inactivity_timeout=50):",
            "    if method is None: sys.exit('no message within 50 s')",
            "    print('body=' + body.decode())",
            "    for name, value in sorted((props.headers or {}).items()):",
            "        print(f'{name}={value.decode() if isinstance(value, bytes) else value}')",
            "    break",
            "conn.close()");

    private static Process python(Path root, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("/usr/bin/python3"));
        command.addAll(List.of(args));
        if (args[0].equals("-c")) {
            command.add(TestServices.rabbit().host());
            command.add(Integer.toString(TestServices.rabbit().port()));
        }
        ProcessBuilder builder = new ProcessBuilder(command).directory(root.toFile());
        builder.environment().put("REDIS_HOST", TestServices.redis().host());
        builder.environment()
                .put("REDIS_PORT", Integer.toString(TestServices.redis().port()));
        return builder.redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static String run(Path root, String... args) throws Exception {
        Process process = python(root, args);
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as("python3 %s: %s", List.of(args), out).isZero();
        return out.strip();
    }
}
