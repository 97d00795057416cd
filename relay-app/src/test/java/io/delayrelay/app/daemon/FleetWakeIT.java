package io.delayrelay.app.daemon;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Two instances of the exec jar, as processes, on a Redis with keyspace notifications: entries written by plain
 * {@code ZADD} (no wake-up) to every shard, due over one second, are each delivered once, never early and within
 * moments of their due time, although each instance pops only the shards it knows to be due and the safety sweep is
 * set far beyond the test (an entry only a sweep would find would be seconds late). And busy shards: two shards
 * owned by different instances, each written ~150 times a second, are each polled by their owner instead of heard
 * (their keyspace channels unsubscribed, {@code delay_relay_shards_polled} 1 on each instance), an entry due at once
 * on each is still delivered once within a second, and once the writes stop both are heard again.
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
        awaitListening(a, b);

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

    /** Shards of the busy-shard test: two busy (one per instance), two quiet. */
    private static final int BUSY_TEST_SHARDS = 4;
    /** Far-future ZADDs per second over both busy shards (each above the 100/s that makes a shard busy). */
    private static final int WRITES_PER_SECOND = 300;
    /** A write due now to a polled shard is delivered within this (the poll is every 10 ms) on a loaded 2-core box. */
    private static final Duration PICK_UP = Duration.ofSeconds(1);

    @Test
    void busyShardsOfBothInstancesAreEachPolledByTheirOwnerAndHeardAgainOnceQuiet() throws Exception {
        redis = PrivateRedis.start("Kz");
        String business = kit.business("fleetbusy");
        String exchange = kit.exchange("fleetbusy");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        int managementA = FreePort.next();
        int managementB = FreePort.next();
        RelayProcess a = startWeb("a", business, exchange, managementA);
        RelayProcess b = startWeb("b", business, exchange, managementB);
        OpsClient opsA = new OpsClient(managementA, null);
        OpsClient opsB = new OpsClient(managementB, null);
        awaitListening(a, b);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);

        // the division settled: two shards each, every channel heard by exactly its owner
        AtomicReference<List<Integer>> ownedA = new AtomicReference<>();
        AtomicReference<List<Integer>> ownedB = new AtomicReference<>();
        await("each instance pops two shards and hears exactly those")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(250))
                .untilAsserted(() -> {
                    ownedA.set(opsA.divisionShards(business));
                    ownedB.set(opsB.divisionShards(business));
                    assertThat(ownedA.get()).as("a's shards").hasSize(BUSY_TEST_SHARDS / 2);
                    assertThat(ownedB.get()).as("b's shards").hasSize(BUSY_TEST_SHARDS / 2);
                    Set<Integer> all = new HashSet<>(ownedA.get());
                    all.addAll(ownedB.get());
                    assertThat(all).as("every shard has one owner").hasSize(BUSY_TEST_SHARDS);
                    assertThat(subscribers(keys)).as("subscribers per shard").containsOnly(1L);
                });
        assertThat(opsA.gauge("delay_relay_shards_polled", business))
                .as("a polls no shard while all are quiet")
                .isEqualTo(0.0);
        assertThat(opsB.gauge("delay_relay_shards_polled", business))
                .as("b polls no shard while all are quiet")
                .isEqualTo(0.0);
        int busyA = ownedA.get().get(0);
        int busyB = ownedB.get().get(0);
        List<Integer> quiet =
                new ArrayList<>(List.of(ownedA.get().get(1), ownedB.get().get(1)));

        // ~150 far-future ZADDs a second to each busy shard, paced by the clock (a late write is caught up)
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicLong written = new AtomicLong();
        Thread writer = new Thread(() -> {
            byte[][] busyKeys = {bytes(keys.shard(busyA)), bytes(keys.shard(busyB))};
            long periodNanos = 1_000_000_000L / WRITES_PER_SECOND;
            try (RedisConnection c = redis.connection()) {
                double due = System.currentTimeMillis() + 3_600_000.0;
                long next = System.nanoTime();
                while (writing.get()) {
                    long n = written.getAndIncrement();
                    c.zSetCommands().zAdd(busyKeys[(int) (n % 2)], due, bytes("far-" + n));
                    next += periodNanos;
                    LockSupport.parkNanos(next - System.nanoTime());
                }
            }
        });
        writer.start();
        List<Received> dueNow;
        try {
            await("both busy shards polled: their channels unsubscribed")
                    .atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> numsub(keys, busyA) == 0 && numsub(keys, busyB) == 0);
            for (int shard : quiet) {
                assertThat(numsub(keys, shard))
                        .as("quiet shard %d still heard by its owner", shard)
                        .isEqualTo(1);
            }
            // each instance polls its own busy shard, none polls the other's: exactly 1 on each
            await("each instance's polled-shards gauge")
                    .atMost(Duration.ofSeconds(2))
                    .pollInterval(Duration.ofMillis(100))
                    .untilAsserted(() -> {
                        assertThat(opsA.gauge("delay_relay_shards_polled", business))
                                .as("a polls its busy shard %d", busyA)
                                .isEqualTo(1.0);
                        assertThat(opsB.gauge("delay_relay_shards_polled", business))
                                .as("b polls its busy shard %d", busyB)
                                .isEqualTo(1.0);
                    });

            zaddDueNow(keys, busyA, "due now on a's busy shard");
            zaddDueNow(keys, busyB, "due now on b's busy shard");
            dueNow = RelayTestKit.collect(received, 2, Duration.ofSeconds(10), Duration.ofMillis(500));
        } finally {
            writing.set(false);
            writer.join();
        }
        assertThat(dueNow)
                .extracting(Received::text)
                .containsExactlyInAnyOrder("due now on a's busy shard", "due now on b's busy shard");
        assertPickedUpWithinBound(dueNow);
        // busy takes two checks (500 ms apart) of at least 50 notifications each, on each shard
        assertThat(written.get())
                .as("far-future writes that made the shards busy")
                .isGreaterThanOrEqualTo(200);

        // quiet again: heard within the recheck interval (5 s) plus a check
        await("both busy shards heard again")
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(100))
                .untilAsserted(() -> assertThat(subscribers(keys))
                        .as("subscribers per shard")
                        .containsOnly(1L));
        await("no shard polled once heard again")
                .atMost(Duration.ofSeconds(2))
                .pollInterval(Duration.ofMillis(100))
                .untilAsserted(() -> {
                    assertThat(opsA.gauge("delay_relay_shards_polled", business))
                            .as("a's polled shards")
                            .isEqualTo(0.0);
                    assertThat(opsB.gauge("delay_relay_shards_polled", business))
                            .as("b's polled shards")
                            .isEqualTo(0.0);
                });
        zaddDueNow(keys, busyA, "due now on a's shard, heard again");
        zaddDueNow(keys, busyB, "due now on b's shard, heard again");
        List<Received> heard = RelayTestKit.collect(received, 2, Duration.ofSeconds(10), Duration.ofSeconds(1));
        assertThat(heard)
                .extracting(Received::text)
                .containsExactlyInAnyOrder("due now on a's shard, heard again", "due now on b's shard, heard again");
        assertPickedUpWithinBound(heard);
        assertThat(received)
                .as("nothing else delivered (no duplicate, no far-future entry)")
                .isEmpty();
        try (RedisConnection c = redis.connection()) {
            assertThat(c.zSetCommands().zCard(bytes(keys.shard(busyA)))
                            + c.zSetCommands().zCard(bytes(keys.shard(busyB))))
                    .as("the far-future entries are all still scheduled")
                    .isEqualTo(written.get());
        }
        System.out.printf(
                "FIGURE fleet busy shards: %d far-future ZADDs to shards %d (a) and %d (b); due-now entries relayed"
                        + " %s ms after due while polled, %s ms once heard again%n",
                written.get(), busyA, busyB, lateness(dueNow), lateness(heard));
    }

    private RelayProcess startWeb(String name, String business, String exchange, int management) throws Exception {
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(),
                business,
                exchange,
                "due",
                "shards",
                BUSY_TEST_SHARDS,
                "threads",
                2,
                "max-idle",
                "10m");
        props.put("spring.data.redis.port", redis.port());
        props.put("relay.wake.safety-sweep", "10m");
        props.put("relay.fleet.instance-id", name);
        props.put("server.port", FreePort.next());
        props.put("management.server.port", management);
        RelayProcess process = RelayProcess.start("fleetbusy-" + name, props, true, RelayProcess.C1);
        processes.add(process);
        return process;
    }

    /** PUBSUB NUMSUB of every shard's keyspace channel, by shard. */
    private List<Long> subscribers(DelayQueueKeys keys) {
        String[] channels = new String[BUSY_TEST_SHARDS];
        for (int shard = 0; shard < BUSY_TEST_SHARDS; shard++) {
            channels[shard] = channel(keys, shard);
        }
        try (StatefulRedisConnection<String, String> c =
                ((RedisClient) redis.factory().getNativeClient()).connect()) {
            Map<String, Long> numsub = c.sync().pubsubNumsub(channels);
            List<Long> counts = new ArrayList<>();
            for (String channel : channels) {
                counts.add(numsub.get(channel));
            }
            return counts;
        }
    }

    private long numsub(DelayQueueKeys keys, int shard) {
        return subscribers(keys).get(shard);
    }

    private static String channel(DelayQueueKeys keys, int shard) {
        return "__keyspace@0__:" + keys.shard(shard);
    }

    /** A plain ZADD (no wake-up) due now by Redis time. */
    private void zaddDueNow(DelayQueueKeys keys, int shard, String text) {
        try (RedisConnection c = redis.connection()) {
            c.zSetCommands().zAdd(bytes(keys.shard(shard)), c.serverCommands().time(), bytes(text));
        }
    }

    /** Each was published at or after its due time (Redis time) and within {@link #PICK_UP} of it. */
    private static void assertPickedUpWithinBound(List<Received> all) {
        for (Received r : all) {
            assertThat(r.header(RelayHeaders.RELAYED_AT) - r.header(RelayHeaders.DUE_AT))
                    .as("due -> relayed of %s", r.text())
                    .isBetween(0L, PICK_UP.toMillis());
        }
    }

    private static List<Long> lateness(List<Received> all) {
        return all.stream()
                .map(r -> r.header(RelayHeaders.RELAYED_AT) - r.header(RelayHeaders.DUE_AT))
                .toList();
    }

    private RelayProcess start(String name, String business, String exchange) throws Exception {
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "shards", SHARDS, "threads", 2);
        props.put("spring.data.redis.port", redis.port());
        props.put("relay.wake.safety-sweep", "10m");
        props.put("relay.fleet.instance-id", name);
        RelayProcess process = RelayProcess.start("fleetwake-" + name, props, false, RelayProcess.C1);
        processes.add(process);
        return process;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Waits until every relay started and hears keyspace notifications; fails with its output if one exited. */
    private static void awaitListening(RelayProcess... relays) {
        for (RelayProcess relay : relays) {
            await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
                if (!relay.isAlive()) {
                    throw new AssertionError("relay exited:\n" + relay.output());
                }
                return relay.started() && relay.output().contains("keyspace notifications on");
            });
        }
    }
}
