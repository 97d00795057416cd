package io.delayrelay.app.daemon;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadLocalRandom;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TcpProxy;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A seat means "I relay" (issue 38), with the exec jar as users run it: three instances of one business, 12 shards;
 * B's own configuration pauses the business, C reaches RabbitMQ through a proxy of the test's own. B never holds a
 * seat, and the entries of every shard arrive; then C's path to RabbitMQ is cut after start: C gives its seat up
 * within give-up-after, A pops C's shards, and every entry arrives within the stated bound (give-up-after + two
 * renewal periods + the retry delay: 12 s at the defaults), none lost, none early, none twice. The ops views say
 * who holds which shards and why B and C gave their seats up; C takes a seat again once its path is back.
 */
class FleetSickInstanceIT {

    static final int SHARDS = 12;
    static final int ENTRIES = 1_500;
    /** give-up-after 5 s + two renewal periods (3 s each at seat-ttl 9 s) + retry-delay 1 s (docs/operations.md). */
    static final Duration BOUND = Duration.ofSeconds(12);
    /** A loaded 2-core machine: three JVMs, the consumer, a renewal thread run late. */
    static final Duration MARGIN = Duration.ofSeconds(3);

    private final RelayTestKit kit = new RelayTestKit();
    private final List<RelayProcess> processes = new ArrayList<>();
    private TcpProxy proxy;

    @AfterEach
    void cleanUp() throws Exception {
        for (RelayProcess p : processes) {
            p.close();
        }
        if (proxy != null) {
            proxy.close();
        }
        kit.close();
    }

    @Test
    void anInstancePausedByItsOwnConfigurationOrCutFromTheBrokerGivesItsSeatUpAndNothingWaitsForIt() throws Exception {
        String business = kit.business("sick");
        String exchange = kit.exchange("sick");
        // one inbox per phase over one consumer: a phase's check sees only what arrived after the previous one's
        BlockingQueue<Received> queue = kit.consume(kit.queue(exchange, "due"));
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        int proxyPort = FreePort.next();
        proxy = new TcpProxy(
                proxyPort, TestServices.rabbit().host(), TestServices.rabbit().port());

        int opsA = FreePort.next();
        int opsB = FreePort.next();
        int opsC = FreePort.next();
        start("a", business, exchange, opsA, Map.of());
        start("b", business, exchange, opsB, Map.of("relay.businesses." + business + ".paused", true));
        start("c", business, exchange, opsC, Map.of("spring.rabbitmq.port", proxyPort));
        OpsClient a = new OpsClient(opsA, null);
        OpsClient b = new OpsClient(opsB, null);
        OpsClient c = new OpsClient(opsC, null);
        await("three relays started").atMost(Duration.ofMinutes(4)).until(() -> {
            for (RelayProcess p : processes) {
                assertThat(p.isAlive()).as("relay alive; see %s", p.log()).isTrue();
                if (!p.started()) {
                    return false;
                }
            }
            return true;
        });

        // 1. b is paused by its own configuration: it takes no seat, a and c divide every shard between them
        await("a and c hold the seats, b gave its up")
                .atMost(Duration.ofSeconds(20))
                .until(() -> seatHolders(keys) == 2
                        && a.divisionShards(business).size() == SHARDS / 2
                        && c.divisionShards(business).size() == SHARDS / 2);
        JsonNode bDivision = b.get("/actuator/relay/" + business).get("division");
        assertThat(bDivision.get("givenUp").asString())
                .as("b's ops view says why it holds no seat")
                .contains("paused by this instance's own configuration");
        assertThat(bDivision.get("shards")).isEmpty();
        await("the fleet view lists each instance's seat")
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(instanceSeats(a, business))
                        .containsEntry(
                                "b",
                                "given up: paused by this instance's own configuration "
                                        + "(relay.businesses.<name>.paused)")
                        .hasEntrySatisfying("a", s -> assertThat(s).startsWith("seat "))
                        .hasEntrySatisfying("c", s -> assertThat(s).startsWith("seat ")));
        assertThat(b.gauge("delay_relay_seat_held", business)).isEqualTo(0.0);
        assertThat(a.gauge("delay_relay_seat_held", business)).isEqualTo(1.0);

        List<String> sent = new ArrayList<>();
        Map<String, Long> due = new HashMap<>();
        write(keys, "paused", kit.redisNowMs(), sent, due);
        Deliveries.Report paused = Deliveries.expect(List.copyOf(sent))
                .scheduledDue(due)
                .check(new Deliveries.Inbox(queue), Duration.ofSeconds(30));
        System.out.println("b paused by its own configuration: " + paused);
        paused.assertClean();
        assertThat(paused.duplicates()).isZero();
        assertThat(paused.maxLagMs())
                .as("nothing waits for b: every shard has a relaying owner")
                .isLessThan(MARGIN.toMillis());

        // 2. c's path to RabbitMQ is cut after start: it gives its seat up, a pops every shard
        proxy.cut();
        long cutAt = kit.redisNowMs();
        sent.clear();
        due.clear();
        write(keys, "cut", cutAt, sent, due);
        Deliveries.Report cut = Deliveries.expect(List.copyOf(sent))
                .scheduledDue(due)
                .check(new Deliveries.Inbox(queue), BOUND.plus(MARGIN).plusSeconds(20));
        System.out.println("c cut from RabbitMQ: " + cut);
        cut.assertClean();
        assertThat(cut.duplicates()).isZero();
        assertThat(cut.maxLagMs())
                .as("c's shards relayed by a within the stated bound after their due time")
                .isLessThanOrEqualTo(BOUND.plus(MARGIN).toMillis());
        JsonNode cDivision = c.get("/actuator/relay/" + business).get("division");
        assertThat(cDivision.get("givenUp").asString()).contains("no publish answered by RabbitMQ");
        assertThat(a.divisionShards(business)).as("a pops every shard").hasSize(SHARDS);
        assertThat(c.gauge("delay_relay_seat_held", business)).isEqualTo(0.0);

        // 3. c's path is back: the probe is answered, c takes a seat again and relays its share
        proxy.restore();
        await("c holds a seat again")
                .atMost(Duration.ofSeconds(30))
                .until(() ->
                        seatHolders(keys) == 2 && c.divisionShards(business).size() >= SHARDS / 2);
        sent.clear();
        due.clear();
        write(keys, "back", kit.redisNowMs(), sent, due);
        Deliveries.Report back = Deliveries.expect(List.copyOf(sent))
                .scheduledDue(due)
                .check(new Deliveries.Inbox(queue), Duration.ofSeconds(30));
        System.out.println("c back: " + back);
        back.assertClean();
        assertThat(back.duplicates()).isZero();
    }

    /** ENTRIES plain ZADDs over every shard, due 1-4 s after {@code fromMs}. */
    private void write(DelayQueueKeys keys, String tag, long fromMs, List<String> sent, Map<String, Long> due) {
        try (RedisConnection conn = kit.redis()) {
            conn.openPipeline();
            for (int i = 0; i < ENTRIES; i++) {
                String body = tag + "-" + i;
                long at = fromMs + 1_000 + ThreadLocalRandom.current().nextLong(3_000);
                conn.zSetCommands().zAdd(bytes(keys.shard(i % SHARDS)), at, bytes(body));
                sent.add(body);
                due.put(body, at);
            }
            conn.closePipeline();
        }
    }

    private void start(String name, String business, String exchange, int management, Map<String, Object> extra)
            throws Exception {
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "shards", SHARDS, "threads", 2);
        props.put("relay.fleet.instance-id", name);
        props.put("server.port", FreePort.next());
        props.put("management.server.port", management);
        props.putAll(extra);
        processes.add(RelayProcess.start("sick-" + name, props, true, RelayProcess.C1));
    }

    private long seatHolders(DelayQueueKeys keys) {
        try (RedisConnection conn = kit.redis()) {
            Long n = conn.hashCommands().hLen(bytes(keys.seats()));
            return n == null ? 0 : n;
        }
    }

    /** Instance id -> its seat as the fleet's heartbeats say, from one instance's ops view. */
    private static Map<String, String> instanceSeats(OpsClient ops, String business) {
        Map<String, String> seats = new HashMap<>();
        JsonNode view = ops.get("/actuator/relay/" + business);
        if (view != null && view.get("instances") != null) {
            view.get("instances")
                    .forEach(
                            i -> seats.put(i.get("id").asString(), i.get("seat").asString()));
        }
        return seats;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
