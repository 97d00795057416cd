package io.delayrelay.app.daemon;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The operator's pause holds for the whole fleet, with the exec jar as processes: a pause sent to one instance is
 * honoured by both through the notice on K:wake (the periodic re-read is set to a minute here, so only the notice can
 * be that quick), an instance restarted meanwhile comes up paused, a resume sent to either resumes both; every
 * instance lists the live fleet.
 */
class FleetPauseIT {

    private static final String TOKEN = "fleet-it-token-0123456789";
    private static final Duration MAX_IDLE = Duration.ofMillis(200);
    private static final Duration START = Duration.ofSeconds(150);
    /** The backstop re-read of K:meta: far longer than any wait of this test, so the pushed notice is asserted. */
    private static final Duration RECHECK = Duration.ofSeconds(60);

    private final RelayTestKit kit = new RelayTestKit();
    private final List<RelayProcess> processes = new ArrayList<>();

    @AfterEach
    void cleanUp() throws InterruptedException {
        for (RelayProcess process : processes) {
            process.close();
        }
        kit.close();
    }

    private RelayProcess start(String name, String business, String exchange, int port, int managementPort)
            throws Exception {
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "max-idle",
                MAX_IDLE.toMillis() + "ms",
                "shards",
                4,
                "threads",
                1);
        props.put("server.port", port);
        props.put("management.server.port", managementPort);
        props.put("relay.ops.token", TOKEN);
        props.put("relay.fleet.instance-id", name);
        props.put("relay.fleet.heartbeat-interval", "1s");
        props.put("relay.fleet.pause-recheck-interval", RECHECK.toSeconds() + "s");
        RelayProcess process = RelayProcess.start("fleet-" + name, props, true, RelayProcess.C1);
        processes.add(process);
        return process;
    }

    private static void awaitStarted(RelayProcess process, OpsClient ops) {
        await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
            if (!process.isAlive()) {
                throw new AssertionError("relay exited:\n" + process.output());
            }
            return process.started() && ops.get("/actuator/health/readiness") != null;
        });
    }

    /** Epoch ms of the first log line of the process that contains {@code text} (lines start with an ISO instant). */
    private static long loggedAt(RelayProcess process, String text) throws IOException {
        String line = process.output()
                .lines()
                .filter(l -> l.contains(text))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no log line with '" + text + "'"));
        return Instant.parse(line.substring(0, line.indexOf(' '))).toEpochMilli();
    }

    private static JsonNode view(OpsClient ops, String business) {
        JsonNode view = ops.get("/actuator/relay/" + business);
        assertThat(view).as("GET /actuator/relay/%s", business).isNotNull();
        return view;
    }

    @Test
    void pauseOnOneInstanceHoldsForBothSurvivesARestartAndResumeOnEitherResumesBoth() throws Exception {
        String business = kit.business("fleet");
        String exchange = kit.exchange("fleet");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        int portB = FreePort.next();
        int managementB = FreePort.next();
        int managementA = FreePort.next();
        RelayProcess a = start("a", business, exchange, FreePort.next(), managementA);
        RelayProcess b = start("b", business, exchange, portB, managementB);
        OpsClient opsA = new OpsClient(managementA, TOKEN);
        OpsClient opsB = new OpsClient(managementB, TOKEN);
        awaitStarted(a, opsA);
        awaitStarted(b, opsB);

        await().atMost(Duration.ofSeconds(10))
                .until(() -> view(opsA, business).get("instances").size() == 2);
        JsonNode instances = view(opsB, business).get("instances");
        assertThat(instances).extracting(i -> i.get("id").asString()).containsExactly("a", "b");
        assertThat(instances.get(0).get("lastSeen").asLong())
                .isGreaterThan(instances.get(0).get("startedAt").asLong());
        assertThat(instances.get(0).get("host").asString()).isNotBlank();
        assertThat(instances.get(0).get("version").asString()).isEqualTo("0.1.0-SNAPSHOT");

        kit.producer().scheduleAfter(business, "before the pause", Duration.ZERO);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ZERO))
                .hasSize(1);

        JsonNode paused = opsA.post("/actuator/relay/" + business + "/pause", "{\"by\":\"fleet-it\"}");
        assertThat(paused.get("paused").asBoolean()).isTrue();
        long pausedAt = paused.get("pause").get("at").asLong();
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> view(opsB, business).get("paused").asBoolean());
        // When b applied it, from its log line (the HTTP round trips of this test are slower than the follow itself)
        long followMs =
                loggedAt(b, "business=" + business + ": paused for every instance by default (fleet-it)") - pausedAt;
        System.out.printf(
                "FIGURE fleet pause: instance b paused %d ms after a stored the pause (notice; re-read every %d s)%n",
                followMs, RECHECK.toSeconds());
        assertThat(followMs)
                .as("b follows a's notice, well before its own re-read (generous margin for a busy machine)")
                .isLessThan(RECHECK.toMillis() / 6);
        JsonNode pause = view(opsB, business).get("pause");
        assertThat(pause.get("operator").asBoolean()).isTrue();
        assertThat(pause.get("config").asBoolean()).isFalse();
        assertThat(pause.get("by").asString()).isEqualTo("default (fleet-it)");
        assertThat(pause.get("at").asLong()).isPositive();

        for (int i = 0; i < 20; i++) {
            kit.producer().scheduleAfter(business, "while paused " + i, Duration.ZERO);
        }
        assertThat(received.poll(2, TimeUnit.SECONDS))
                .as("nothing relayed while paused")
                .isNull();
        assertThat(kit.scheduled(business)).isEqualTo(20);

        b.close();
        RelayProcess b2 = start("b2", business, exchange, portB, managementB);
        awaitStarted(b2, opsB);
        assertThat(view(opsB, business).get("paused").asBoolean())
                .as("restarted instance comes up paused")
                .isTrue();
        assertThat(received.poll(1, TimeUnit.SECONDS))
                .as("nothing relayed by the restarted instance")
                .isNull();
        assertThat(kit.scheduled(business)).isEqualTo(20);
        await().atMost(Duration.ofSeconds(10))
                .until(() -> view(opsA, business).get("instances").findValues("id").stream()
                        .map(JsonNode::asString)
                        .toList()
                        .equals(List.of("a", "b2")));

        JsonNode resumed = opsB.post("/actuator/relay/" + business + "/resume", "{}");
        assertThat(resumed.get("paused").asBoolean()).isFalse();
        await().atMost(RECHECK.dividedBy(6)) // the notice, not a's re-read a minute later
                .until(() -> !view(opsA, business).get("paused").asBoolean());
        List<Received> all = RelayTestKit.collect(received, 20, Duration.ofSeconds(15), Duration.ofMillis(500));
        assertThat(all).extracting(Received::text).hasSize(20).doesNotHaveDuplicates();
        assertThat(view(opsA, business).get("pause").get("operator").asBoolean())
                .isFalse();
    }
}
