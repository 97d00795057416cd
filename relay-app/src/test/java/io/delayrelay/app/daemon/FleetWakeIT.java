package io.delayrelay.app.daemon;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Two instances of the exec jar, as processes, on a Redis with keyspace notifications: entries written by plain
 * {@code ZADD} (no wake-up) to every shard, due over one second, are each delivered once, never early and within
 * moments of their due time, although each instance pops only the shards it knows to be due and the safety sweep is
 * set far beyond the test (an entry only a sweep would find would be seconds late).
 */
class FleetWakeIT {

    private static final int ENTRIES = 400;
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
    void plainZaddEntriesOnEveryShardAreEachDeliveredOnceAndOnTimeByTwoInstances() throws Exception {
        redis = PrivateRedis.start("Kz");
        String business = kit.business("fleetwake");
        String exchange = kit.exchange("fleetwake");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        RelayProcess a = start("a", business, exchange);
        RelayProcess b = start("b", business, exchange);
        for (RelayProcess relay : List.of(a, b)) {
            await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
                if (!relay.isAlive()) {
                    throw new AssertionError("relay exited:\n" + relay.output());
                }
                return relay.started() && relay.output().contains("keyspace notifications on");
            });
        }

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long first = redis.nowMs() + 1_500;
        try (RedisConnection c = redis.connection()) {
            for (int i = 0; i < ENTRIES; i++) {
                long due = first + i * 1_000L / ENTRIES;
                c.zSetCommands().zAdd(bytes(keys.shard(i % SHARDS)), due, bytes("entry-" + i));
            }
        }

        List<Received> all = RelayTestKit.collect(received, ENTRIES, Duration.ofSeconds(30), Duration.ofSeconds(1));
        assertThat(all).extracting(Received::text).doesNotHaveDuplicates().hasSize(ENTRIES);
        long latest = 0;
        for (Received r : all) {
            long late = r.header(RelayHeaders.RELAYED_AT) - r.header(RelayHeaders.DUE_AT);
            assertThat(late).as("%s published before its due time", r.text()).isNotNegative();
            latest = Math.max(latest, late);
        }
        System.out.printf(
                "FIGURE fleet wake: %d plain-ZADD entries, 2 exec-jar instances, latest %d ms after due%n",
                ENTRIES, latest);
        assertThat(latest)
                .as("every entry published soon after its due time (the safety sweep is 10 minutes away)")
                .isLessThan(2_000);
    }

    private RelayProcess start(String name, String business, String exchange) throws Exception {
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "shards", SHARDS, "threads", 2);
        props.put("spring.data.redis.port", redis.port());
        props.put("relay.wake.safety-sweep", "10m");
        props.put("relay.fleet.instance-id", name);
        RelayProcess process = RelayProcess.start("fleetwake-" + name, props, false, "-XX:TieredStopAtLevel=1");
        processes.add(process);
        return process;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
