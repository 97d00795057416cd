package io.delayrelay.app.daemon;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.zset.DefaultTuple;
import org.springframework.data.redis.connection.zset.Tuple;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The fleet-wide rate cap as an operator facing a midnight storm uses it: two exec-jar instances, a business with
 * {@code max-rate: 2000} whose 20,000 entries all fall due in the same second, and another business with a steady
 * 200 messages/s. The storm arrives at 2,000/s (±10 %) although two instances relay it, and the steady business
 * stays on time meanwhile. Every message arrives once, none early; {@code delay_relay_early_total} reads 0 on both.
 */
@Tag("timing")
class RateCapIT {

    private static final int STORM = 20_000;
    private static final int RATE = 2_000;
    private static final int STEADY_RATE = 200;
    /** The steady business's entries fall due from 1 s before the storm to 4 s after its expected end. */
    private static final int STEADY_SECONDS = 15;

    private static final int SHARDS = 16;
    private static final Duration START = Duration.ofSeconds(150);

    private final RelayTestKit kit = new RelayTestKit();
    private final List<RelayProcess> processes = new ArrayList<>();
    private PrivateRedis redis;

    @AfterEach
    void cleanUp() throws InterruptedException {
        for (RelayProcess process : processes) {
            process.close();
        }
        kit.close();
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void aStormOfOneBusinessArrivesAtItsFleetWideCapWhileAnotherBusinessStaysOnTime() throws Exception {
        redis = PrivateRedis.start("Kz");
        String storm = kit.business("storm");
        String steady = kit.business("steady");
        String stormExchange = kit.exchange("storm");
        String steadyExchange = kit.exchange("steady");
        BlockingQueue<Received> stormReceived = kit.consume(kit.queue(stormExchange, "due"));
        BlockingQueue<Received> steadyReceived = kit.consume(kit.queue(steadyExchange, "due"));
        List<OpsClient> ops = new ArrayList<>();
        for (String name : List.of("a", "b")) {
            int management = FreePort.next();
            RelayProcess relay = start(name, storm, stormExchange, steady, steadyExchange, management);
            ops.add(new OpsClient(management, null));
            await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
                if (!relay.isAlive()) {
                    throw new AssertionError("relay exited:\n" + relay.output());
                }
                return relay.started() && relay.output().contains("keyspace notifications on");
            });
        }

        long stormDue = redis.nowMs() + 4_000;
        Map<String, Long> steadyDue = new HashMap<>();
        Map<String, Long> stormDueByBody = new HashMap<>();
        Map<Integer, Set<Tuple>> steadyShards = new HashMap<>();
        Map<Integer, Set<Tuple>> stormShards = new HashMap<>();
        int steadyCount = STEADY_RATE * STEADY_SECONDS;
        for (int i = 0; i < steadyCount; i++) {
            long due = stormDue - 1_000 + i * 1_000L / STEADY_RATE;
            String body = "steady-" + i;
            steadyDue.put(body, due);
            steadyShards.computeIfAbsent(i % SHARDS, s -> new HashSet<>()).add(new DefaultTuple(bytes(body), (double)
                    due));
        }
        for (int i = 0; i < STORM; i++) {
            long due = stormDue + i % 1_000;
            String body = "storm-" + i;
            stormDueByBody.put(body, due);
            stormShards.computeIfAbsent(i % SHARDS, s -> new HashSet<>()).add(new DefaultTuple(bytes(body), (double)
                    due));
        }
        try (RedisConnection c = redis.connection()) {
            DelayQueueKeys steadyKeys = DelayQueueKeys.forBusiness(steady);
            DelayQueueKeys stormKeys = DelayQueueKeys.forBusiness(storm);
            steadyShards.forEach((shard, tuples) -> c.zSetCommands().zAdd(bytes(steadyKeys.shard(shard)), tuples));
            stormShards.forEach((shard, tuples) -> c.zSetCommands().zAdd(bytes(stormKeys.shard(shard)), tuples));
        }
        assertThat(redis.nowMs())
                .as("everything written before the storm falls due")
                .isLessThan(stormDue - 500);

        Deliveries.Report stormReport = Deliveries.expect(stormDueByBody.keySet())
                .scheduledDue(stormDueByBody)
                .quiet(Duration.ofSeconds(2))
                .check(stormReceived, Duration.ofSeconds(60));
        Deliveries.Report steadyReport = Deliveries.expect(steadyDue.keySet())
                .scheduledDue(steadyDue)
                .quiet(Duration.ofSeconds(1))
                .check(steadyReceived, Duration.ofSeconds(30));
        stormReport.assertClean();
        steadyReport.assertClean();
        assertThat(stormReport.duplicates()).isZero();
        assertThat(steadyReport.duplicates()).isZero();

        // the storm's drain rate, on the relay's own Redis-time stamps
        long[] stamps = stormReport.all().stream()
                .mapToLong(r -> r.header(RelayHeaders.RELAYED_AT))
                .sorted()
                .toArray();
        double seconds = (stamps[stamps.length - 1] - stamps[0]) / 1000.0;
        double rate = (stamps.length - 1) / seconds;
        double middleRate =
                (stamps.length * 8 / 10) / ((stamps[stamps.length * 9 / 10] - stamps[stamps.length / 10]) / 1000.0);
        long firstLate = stamps[0] - stormDue;

        // the steady business's lateness while the storm drained: arrival (this host's clock, Redis runs here) - due
        long[] lateness = steadyReport.all().stream()
                .mapToLong(r -> r.receivedAtMs() - steadyDue.get(r.text()))
                .sorted()
                .toArray();
        long[] stamped = steadyReport.all().stream()
                .mapToLong(r -> r.header(RelayHeaders.RELAYED_AT) - steadyDue.get(r.text()))
                .sorted()
                .toArray();
        long p50 = lateness[lateness.length / 2];
        long p99 = lateness[(int) Math.ceil(lateness.length * 0.99) - 1];
        long max = lateness[lateness.length - 1];
        long stampedP99 = stamped[(int) Math.ceil(stamped.length * 0.99) - 1];

        // the same by when the entry fell due: before the storm, while it drained, after it
        long stormEnd = stamps[stamps.length - 1];
        String phases = String.format(
                "relayed-at p99 before %d ms, during %d ms, after %d ms",
                p99(steadyReport.all(), steadyDue, Long.MIN_VALUE, stormDue),
                p99(steadyReport.all(), steadyDue, stormDue, stormEnd),
                p99(steadyReport.all(), steadyDue, stormEnd, Long.MAX_VALUE));

        long early = 0;
        for (OpsClient client : ops) {
            String scrape = client.text("/actuator/prometheus");
            for (String business : List.of(storm, steady)) {
                assertThat(scrape).contains("delay_relay_early_total{business=\"" + business + "\"");
                early += counter(scrape, "delay_relay_early_total", business);
            }
        }
        System.out.printf(
                "FIGURE rate cap: %d entries due in one second, max-rate %d, 2 exec-jar instances: %.0f/s overall"
                        + " (%.1f s, first %d ms after due), %.0f/s over the middle 80%%; steady %d/s business:"
                        + " arrival lateness p50 %d ms p99 %d ms max %d ms, relayed-at p99 %d ms (%s);"
                        + " early_total %d; load average %s%n",
                STORM,
                RATE,
                rate,
                seconds,
                firstLate,
                middleRate,
                STEADY_RATE,
                p50,
                p99,
                max,
                stampedP99,
                phases,
                early,
                loadAverage());

        assertThat(early)
                .as("delay_relay_early_total of both businesses on both instances")
                .isZero();
        assertThat(rate).as("the storm's drain rate, fleet-wide").isBetween(RATE * 0.9, RATE * 1.1);
        // the relay's lateness (its Redis-time stamp at publish): what delay_relay_lag_seconds measures up to the
        // confirm. Arrival at this test's consumer adds the consumer's own delay on a loaded host: printed above.
        assertThat(stampedP99)
                .as("the steady business's p99 lateness (relayed-at - due) while the storm drains")
                .isLessThanOrEqualTo(100);
    }

    private RelayProcess start(
            String name, String storm, String stormExchange, String steady, String steadyExchange, int management)
            throws Exception {
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(), storm, stormExchange, "due", "shards", SHARDS, "threads", 2, "max-rate", RATE);
        RelayTestKit.business(props, steady, steadyExchange, "due", "shards", SHARDS, "threads", 2);
        props.put("spring.data.redis.port", redis.port());
        props.put("relay.fleet.instance-id", name);
        props.put("server.port", FreePort.next());
        props.put("management.server.port", management);
        RelayProcess process = RelayProcess.start("ratecap-" + name, props, true, RelayProcess.C1);
        processes.add(process);
        return process;
    }

    /** p99 of relayed-at minus due of the entries due in [from, to). */
    private static long p99(List<Received> all, Map<String, Long> due, long from, long to) {
        long[] late = all.stream()
                .filter(r -> due.get(r.text()) >= from && due.get(r.text()) < to)
                .mapToLong(r -> r.header(RelayHeaders.RELAYED_AT) - due.get(r.text()))
                .sorted()
                .toArray();
        return late.length == 0 ? -1 : late[(int) Math.ceil(late.length * 0.99) - 1];
    }

    /** A counter's value in a Prometheus scrape, for one business; 0 when the series is not there. */
    static long counter(String scrape, String name, String business) {
        Matcher m = Pattern.compile(
                        "(?m)^" + name + "\\{[^}]*business=\"" + Pattern.quote(business) + "\"[^}]*} ([0-9.eE+-]+)$")
                .matcher(scrape);
        long total = 0;
        while (m.find()) {
            total += (long) Double.parseDouble(m.group(1));
        }
        return total;
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
