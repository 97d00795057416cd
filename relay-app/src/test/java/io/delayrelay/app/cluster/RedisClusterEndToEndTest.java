package io.delayrelay.app.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ScheduleRequest;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisClusterConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay and relay-api against a real local Redis Cluster (3 masters, started by scripts/redis-cluster.sh):
 * configuration only ({@code spring.data.redis.cluster.nodes}), no code change. Stays long (~40 s): the cold method
 * waits for due times past the product's minimum cold-after (10 s); the cluster is started once per class.
 */
class RedisClusterEndToEndTest {

    private static final int SHARDS = 16;
    private static LocalRedisCluster cluster;
    private static RelayTestKit kit;
    private static final List<DelayQueueKeys> used = new ArrayList<>();
    /** Three businesses served by the same two relay instances (starting a context is the slow part here). */
    private static String once;

    private static String byId;
    private static String dead;
    private static BlockingQueue<Received> onceReceived;
    private static BlockingQueue<Received> byIdReceived;
    private static String deadExchange;
    /** A business with the cold tier on: its far-future entries move to cold blocks on the cluster and back. */
    private static String cold;

    private static String sched;

    private static BlockingQueue<Received> schedReceived;

    private static BlockingQueue<Received> coldReceived;
    /** A business whose producer sends batches (scheduleAll): Lettuce routes each call of a batch to its node. */
    private static String batch;

    private static BlockingQueue<Received> batchReceived;

    @BeforeAll
    static void startClusterAndTwoRelays() {
        cluster = LocalRedisCluster.up();
        kit = new RelayTestKit();
        once = business("cluster-once");
        byId = business("cluster-byid");
        dead = business("cluster-dead");
        String onceExchange = kit.exchange("cluster-once");
        onceReceived = kit.consume(kit.queue(onceExchange, "due"));
        String byIdExchange = kit.exchange("cluster-byid");
        byIdReceived = kit.consume(kit.queue(byIdExchange, "due"));
        deadExchange = kit.exchange("cluster-dead");
        cold = business("cluster-cold");
        String coldExchange = kit.exchange("cluster-cold");
        coldReceived = kit.consume(kit.queue(coldExchange, "due"));
        batch = business("cluster-batch");
        String batchExchange = kit.exchange("cluster-batch");
        batchReceived = kit.consume(kit.queue(batchExchange, "due"));
        sched = business("cluster-sched");
        String schedExchange = kit.exchange("cluster-sched");
        schedReceived = kit.consume(kit.queue(schedExchange, "due"));
        Map<String, Object> props = kit.baseProperties();
        props.remove("spring.data.redis.host");
        props.remove("spring.data.redis.port");
        props.put("spring.data.redis.cluster.nodes", cluster.nodesProperty());
        RelayTestKit.business(props, once, onceExchange, "due", "shards", SHARDS, "threads", 2, "batch-size", 50);
        RelayTestKit.business(props, byId, byIdExchange, "due", "shards", SHARDS, "threads", 1);
        RelayTestKit.business(props, dead, deadExchange, "nobody-listens", "shards", SHARDS, "threads", 1);
        RelayTestKit.business(props, cold, coldExchange, "due", "shards", SHARDS, "threads", 1, "cold-after", "10s");
        RelayTestKit.business(props, batch, batchExchange, "due", "shards", SHARDS, "threads", 1);
        RelayTestKit.business(props, sched, schedExchange, "due", "shards", SHARDS, "threads", 1);
        props.put("relay.schedules." + sched + ".business", sched);
        props.put("relay.schedules." + sched + ".every", "1s");
        for (int instance = 0; instance < 2; instance++) {
            kit.startRelay(props);
        }
    }

    @AfterAll
    static void stopRelaysAndCluster() {
        try {
            if (kit != null) {
                kit.close();
            }
            if (cluster != null) {
                used.forEach(keys -> cluster.deleteKeys(keys, SHARDS));
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    @Test
    void everyKeyAScriptTouchesForOneShardHashesToTheShardsSlot() {
        for (String business : List.of("order-timeout", "a", "review-7d", "x-" + "y".repeat(200))) {
            DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
            for (int shard = 0; shard < 16_384; shard++) {
                int slot = SlotHash.getSlot(keys.shard(shard));
                for (byte[] key : keys.shardKeyBytes(shard)) {
                    assertThat(SlotHash.getSlot(key))
                            .as("%s shard %d", new String(key, StandardCharsets.UTF_8), shard)
                            .isEqualTo(slot);
                }
            }
        }
        DelayQueueKeys keys = DelayQueueKeys.forBusiness("order-timeout");
        try (RedisClusterConnection c = cluster.connection()) {
            for (int shard = 0; shard < SHARDS; shard++) {
                Integer serverSlot = c.clusterGetSlotForKey(DelayQueueKeys.bytes(keys.shard(shard)));
                for (byte[] key : keys.shardKeyBytes(shard)) {
                    assertThat(c.clusterGetSlotForKey(key))
                            .as("CLUSTER KEYSLOT agrees")
                            .isEqualTo(serverSlot);
                }
            }
        }
    }

    /** A call of a local function naming a key, e.g. {@code key(g, 1)}: checked to return {@code KEYS[...]}. */
    private static final Pattern ACCESSOR = Pattern.compile("([a-zA-Z]+)\\(");

    /**
     * How the cold tier's scripts name their keys: from the prefix of a declared key, or a local
     * built from it.
     */
    private static final Pattern COLD_KEYS =
            Pattern.compile("prefix \\.\\.|coldIx\\b|ixKey\\b|ix\\b|ix\\(|coldIndexOf\\(|part\\("
                    + "|(?:cold|c)\\.(?:prefix \\.\\.|ix\\b|drop\\b|moved\\b)|dropKey\\b|movedKey\\b|touched\\[");

    @Test
    void luaScriptsOnlyTouchKeysPassedInKeys() throws IOException {
        Pattern call = Pattern.compile("redis\\.call\\('([A-Z]+)'(?:,\\s*([^,)]+))?");
        List<Path> dirs = List.of(Path.of("src/main/resources/io/delayrelay/app/lua"), Path.of("../contract"));
        int calls = 0;
        for (Path dir : dirs) {
            try (Stream<Path> files = Files.list(dir)) {
                for (Path file :
                        files.filter(f -> f.toString().endsWith(".lua")).toList()) {
                    Matcher m = call.matcher(Files.readString(file));
                    while (m.find()) {
                        calls++;
                        String command = m.group(1);
                        if (command.equals("TIME")) {
                            continue;
                        }
                        if (command.equals("PUBLISH")) {
                            assertThat(m.group(2))
                                    .as("%s: PUBLISH channel (not a key)", file)
                                    .startsWith("ARGV[");
                            continue;
                        }
                        String key = m.group(2);
                        Matcher accessor = ACCESSOR.matcher(key);
                        if (accessor.lookingAt()
                                && Pattern.compile("function " + accessor.group(1) + "\\([^)]*\\)\\s+return KEYS\\[")
                                        .matcher(Files.readString(file))
                                        .find()) {
                            // pop.lua's and ack.lua's accessors of a shard group's (or a carried ack section's)
                            // KEYS: key(g, i), akey(i) return KEYS[(g - 1) * n + i]
                            continue;
                        }
                        if (COLD_KEYS.matcher(key).lookingAt()) {
                            // the cold tier's keys, named from a declared key's {K:i} hash tag: same slot (the
                            // cluster test farFutureEntriesGoColdAndComeBackOnTimeOnTheCluster runs them there)
                            assertThat(Files.readString(file))
                                    .as("%s: the cold keys' prefix is a declared key's", file.getFileName())
                                    .containsPattern("local prefix = string\\.sub\\(KEYS\\[\\d+\\]");
                            continue;
                        }
                        assertThat(key)
                                .as("%s: %s must name a key from KEYS", file.getFileName(), command)
                                .startsWith("KEYS[");
                    }
                }
            }
        }
        assertThat(calls).isGreaterThan(20);
    }

    @Test
    void deliversEachMessageExactlyOnceWithTwoRelayInstancesOnTheCluster() throws Exception {
        String business = once;
        BlockingQueue<Received> received = onceReceived;
        Map<String, Integer> spread = cluster.shardSpread(DelayQueueKeys.forBusiness(business), SHARDS);
        System.out.println("cluster shard spread of " + business + " (" + SHARDS + " shards): " + spread);
        assertThat(spread.values()).as("every master serves shards").allMatch(n -> n > 0);
        RedisDelayedMessageProducer producer = producer();
        int n = 5_000;
        // a control batch an hour away: count() across the cluster must give exactly this while nothing is due
        int control = 300;
        long far = redisNowMs() + Duration.ofHours(1).toMillis();
        for (int i = 0; i < control; i++) {
            producer.schedule(business, "far-" + i, Instant.ofEpochMilli(far));
        }
        assertThat(producer.count(business)).as("count across the cluster").isEqualTo(control);
        long due = redisNowMs() + 500;
        Map<String, Integer> messagesPerMaster = new TreeMap<>();
        Map<String, Long> dueByBody = new HashMap<>();
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        for (int i = 0; i < n; i++) {
            String message = "msg-" + i;
            producer.schedule(business, message, Instant.ofEpochMilli(due + (i % 500)));
            dueByBody.put(message, due + (i % 500));
            messagesPerMaster.merge(
                    cluster.masterOf(keys.shard(ShardSelector.shardOf(message, SHARDS))), 1, Integer::sum);
        }
        System.out.println("cluster message spread of " + n + " messages: " + messagesPerMaster);

        // the control batch is not due: any of it arriving counts as unexpected
        Deliveries.expect(dueByBody.keySet())
                .scheduledDue(dueByBody)
                .quiet(Duration.ofSeconds(1))
                .check(received, Duration.ofSeconds(60));
        assertThat(cluster.zcardSum(keys, SHARDS, DelayQueueKeys::shard))
                .as("only the control batch left scheduled")
                .isEqualTo(control);
        assertThat(producer.count(business)).as("count after the drain").isEqualTo(control);
        await().atMost(Duration.ofSeconds(5))
                .until(() -> cluster.zcardSum(keys, SHARDS, DelayQueueKeys::inflight) == 0);
    }

    @Test
    void cancelRescheduleAndCountByIdWorkOnTheCluster() throws Exception {
        String business = byId;
        BlockingQueue<Received> received = byIdReceived;
        RedisDelayedMessageProducer producer = producer();
        long now = redisNowMs();

        for (int i = 1; i <= 6; i++) {
            producer.scheduleById(business, "order-" + i, "{\"order\":" + i + "}", Instant.ofEpochMilli(now + 1000));
        }
        assertThat(producer.count(business)).isEqualTo(6);
        assertThat(producer.cancelById(business, "order-1")).isTrue();
        assertThat(producer.cancelById(business, "order-1")).as("second cancel").isFalse();
        long movedDue = now + 2500;
        assertThat(producer.rescheduleById(business, "order-2", Instant.ofEpochMilli(movedDue)))
                .isTrue();
        assertThat(producer.rescheduleById(business, "order-9", Instant.ofEpochMilli(movedDue)))
                .isFalse();
        assertThat(producer.count(business)).isEqualTo(5);
        assertThat(producer.peek(business, 10))
                .hasSize(5)
                .last()
                .extracting(e -> e.memberAsString())
                .isEqualTo("order-2");

        List<Received> all = RelayTestKit.collect(received, 5, Duration.ofSeconds(10), Duration.ofMillis(500));
        assertThat(all)
                .extracting(r -> r.headers().get(RelayHeaders.ID))
                .containsExactlyInAnyOrder("order-3", "order-4", "order-5", "order-6", "order-2");
        assertThat(all.get(4).text()).isEqualTo("{\"order\":2}");
        assertThat(all.get(4).header(RelayHeaders.DUE_AT)).isEqualTo(movedDue);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            try (RedisClusterConnection c = cluster.connection()) {
                for (int shard = 0; shard < SHARDS; shard++) {
                    assertThat(c.hashCommands().hLen(DelayQueueKeys.bytes(keys.payloads(shard))))
                            .as("payloads left in shard %d", shard)
                            .isZero();
                }
            }
        });
    }

    /**
     * The cold tier's scripts reach its keys ({K:i}:cold-meta, :cold-ix:n ...) from the shard's hash tag rather than
     * through KEYS (the producer scripts keep their KEYS for producers of every language): on a cluster they must
     * land on the shard's node all the same. Entries due in 20 s leave the hot shards (cold-after 10 s: they must within
     * 10 s, and come back from 15 s on), five are cancelled while cold, the others come back and arrive once, never
     * early.
     */
    @Test
    void aRecurringScheduleOfTwoInstancesFiresEachSlotOnceOnTheCluster() throws Exception {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(sched);
        try (RedisClusterConnection c = cluster.connection()) {
            Integer slot = c.clusterGetSlotForKey(DelayQueueKeys.bytes(keys.shard(0)));
            assertThat(c.clusterGetSlotForKey(DelayQueueKeys.bytes(keys.schedules())))
                    .isEqualTo(slot);
            assertThat(c.clusterGetSlotForKey(DelayQueueKeys.bytes(keys.scheduleState())))
                    .isEqualTo(slot);
        }
        List<Received> got = RelayTestKit.collect(schedReceived, 4, Duration.ofSeconds(15), Duration.ofMillis(1500));
        List<Long> slots = got.stream().map(r -> r.header(RelayHeaders.SLOT)).toList();
        assertThat(slots).hasSizeGreaterThanOrEqualTo(4).doesNotHaveDuplicates().isSorted();
        for (int i = 1; i < slots.size(); i++) {
            assertThat(slots.get(i) - slots.get(i - 1)).as("slots %s", slots).isEqualTo(1000);
        }
        assertThat(got).allSatisfy(r -> assertThat(r.messageId()).isEqualTo(sched + "@" + r.header(RelayHeaders.SLOT)));
    }

    @Test
    void farFutureEntriesGoColdAndComeBackOnTimeOnTheCluster() throws Exception {
        RedisDelayedMessageProducer producer = producer();
        long now = redisNowMs();
        Map<String, Long> dueByBody = new HashMap<>();
        for (int i = 0; i < 100; i++) {
            long due = now + 20_000 + i * 10L;
            String body = "{\"cold\":" + i + "}";
            producer.scheduleById(cold, "cold-" + i, body, Instant.ofEpochMilli(due));
            if (i >= 5) {
                dueByBody.put(body, due);
            }
        }
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(cold);
        await().atMost(Duration.ofSeconds(10)).until(() -> cluster.zcardSum(keys, SHARDS, DelayQueueKeys::shard) == 0);
        assertThat(cluster.zcardSum(keys, SHARDS, DelayQueueKeys::cold))
                .as("cold blocks on the cluster")
                .isPositive();
        for (int i = 0; i < 5; i++) {
            assertThat(producer.cancelById(cold, "cold-" + i))
                    .as("cancel of cold-%d", i)
                    .isTrue();
        }

        Deliveries.expect(dueByBody.keySet())
                .scheduledDue(dueByBody)
                .quiet(Duration.ofSeconds(1))
                .check(coldReceived, Duration.ofSeconds(60));
    }

    @Test
    void aBatchIsScheduledOnEveryMasterAndEachMessageIsDeliveredOnce() throws Exception {
        RedisDelayedMessageProducer producer = producer();
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(batch);
        long due = redisNowMs() + 1_000;
        List<ScheduleRequest> requests = new ArrayList<>();
        Map<String, Long> dueByBody = new HashMap<>();
        Map<String, Integer> perMaster = new TreeMap<>();
        for (int i = 0; i < 600; i++) {
            String id = "order-" + i;
            String body = "{\"order\":" + i + "}";
            requests.add(
                    ScheduleRequest.byId(id, body.getBytes(StandardCharsets.UTF_8), Instant.ofEpochMilli(due + i)));
            dueByBody.put(body, due + i);
            perMaster.merge(cluster.masterOf(keys.shard(ShardSelector.shardOf(id, SHARDS))), 1, Integer::sum);
        }
        assertThat(perMaster).as("the batch spans every master").hasSize(3);

        long[] dues = producer.scheduleAll(batch, requests);

        for (int i = 0; i < dues.length; i++) {
            assertThat(dues[i]).as("due time of #%d", i).isEqualTo(due + i);
        }
        Deliveries.expect(dueByBody.keySet())
                .scheduledDue(dueByBody)
                .quiet(Duration.ofSeconds(1))
                .check(batchReceived, Duration.ofSeconds(60));
        assertThat(cluster.zcardSum(keys, SHARDS, DelayQueueKeys::shard)).isZero();
        await().atMost(Duration.ofSeconds(5))
                .until(() -> cluster.zcardSum(keys, SHARDS, DelayQueueKeys::inflight) == 0);
    }

    @Test
    void unroutableMessagesAreDeadLetteredWithTheirReasonOnTheCluster() {
        String business = dead;
        String exchange = deadExchange;
        RedisDelayedMessageProducer producer = producer();
        List<String> messages = List.of("dead 1", "dead 2", "dead 3", "dead 4", "dead 5", "dead 6");
        messages.forEach(m -> producer.scheduleAfter(business, m, Duration.ZERO));

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        await().atMost(Duration.ofSeconds(10))
                .until(() -> cluster.zcardSum(keys, SHARDS, DelayQueueKeys::dead) == messages.size());
        try (RedisClusterConnection c = cluster.connection()) {
            for (String message : messages) {
                int shard = ShardSelector.shardOf(message, SHARDS);
                byte[] reason = c.hashCommands()
                        .hGet(DelayQueueKeys.bytes(keys.deadReasons(shard)), message.getBytes(StandardCharsets.UTF_8));
                assertThat(new String(reason, StandardCharsets.UTF_8))
                        .startsWith("unroutable: 312 NO_ROUTE")
                        .contains(exchange);
            }
        }
        assertThat(cluster.zcardSum(keys, SHARDS, DelayQueueKeys::shard)).isZero();
        assertThat(cluster.zcardSum(keys, SHARDS, DelayQueueKeys::inflight)).isZero();
    }

    private static String business(String prefix) {
        String business = kit.business(prefix);
        used.add(DelayQueueKeys.forBusiness(business));
        return business;
    }

    private RedisDelayedMessageProducer producer() {
        return RedisDelayedMessageProducer.withDefaultKeys(cluster.factory());
    }

    private long redisNowMs() {
        try (RedisClusterConnection c = cluster.connection()) {
            return c.serverCommands().time();
        }
    }
}
