package io.delayrelay.app.faults;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.CpuPriority;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.core.types.RedisClientInfo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The fleet's division of the shards (INCR K:cursor seats), black-box: three exec-jar relays of one business. In the
 * steady state each shard is popped by exactly one instance (Redis MONITOR, pops attributed by client name); after
 * kill -9 of one instance, and after SIGSTOP of another, the shards they popped are taken over within the stated bound
 * (seat TTL + a third of it: 4 s at the 3 s TTL chosen here), and nothing is lost or delivered twice.
 */
@Tag("faults")
class FleetDivisionTest {

    static final int SHARDS = 12;
    /**
     * relay.division.seat-ttl, set for the test: the bound scales with it (ShardDivisionTest pins the TTL x 4/3 rule),
     * and 3 s instead of the default 9 s takes ~20 s of waiting out of this class.
     */
    static final Duration SEAT_TTL = Duration.ofSeconds(3);
    /** The stated hand-over bound: the seat expires within its TTL, the others take over at their next renewal. */
    static final Duration HAND_OVER = SEAT_TTL.plus(SEAT_TTL.dividedBy(3));
    /** How long an instance pops a share its renewal replaced (ShardDivision.Settings#overlap). */
    static final Duration OVERLAP = SEAT_TTL.plus(SEAT_TTL.dividedBy(3));
    /**
     * Margin for a loaded 2-core machine: a poll (max-idle 100 ms), a publish, the consumer, and a renewal thread
     * that a busy CPU runs late.
     */
    static final Duration MARGIN = Duration.ofMillis(2_500);
    /** A MONITOR window: 30 polls of each shard at max-idle 100 ms. */
    static final Duration WINDOW = Duration.ofSeconds(3);

    /** An EVALSHA in MONITOR's output: client address, number of keys, then the keys and arguments. */
    private static final Pattern POP =
            Pattern.compile("\\[\\d+ ([0-9.:]+)\\] \"(?i:evalsha)\" \"[0-9a-f]+\" \"([0-9]+)\" (.*)$");

    /** The sweep's probe of a relay's shards (one multi-key EXISTS, sent by the relay itself, not by a script). */
    private static final Pattern PROBE = Pattern.compile("\\[\\d+ ([0-9.:]+)\\] \"(?i:exists)\" (.*)$");

    /** One quoted argument of MONITOR's output (shard key names need no escapes). */
    private static final Pattern QUOTED = Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"");

    private final RelayTestKit kit = new RelayTestKit();
    private PrivateRedis redis;
    private final List<RelayProcess> relays = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        for (RelayProcess relay : relays) {
            if (relay.isAlive()) {
                // a relay left frozen by a failed assertion must thaw to stop
                Shell.run(10, "kill", "-CONT", Long.toString(relay.pid()));
            }
            relay.close();
        }
        CpuPriority.restoreSelf();
        kit.close();
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void eachShardHasOnePopperAndAKilledOrFrozenInstancesShardsPassToTheOthersWithinTheBound() throws Exception {
        // its own Redis: MONITOR slows every client of the server it watches, and this class runs in the pool
        redis = PrivateRedis.builder().start();
        String business = kit.business("division");
        String exchange = kit.exchange("division");
        BlockingQueue<Received> queue = kit.consume(kit.queue(exchange, "due"));
        Deliveries.Inbox inbox = new Deliveries.Inbox(queue);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);

        Map<String, RelayProcess> byName = new LinkedHashMap<>();
        for (String name : List.of("A", "B", "C")) {
            // three idle relays: C1 only spares the CPU of C2 compiles (a drain of 200,000 takes twice as long on C1)
            RelayProcess relay = RelayProcess.start(
                    "division-" + name, properties(business, exchange, name), false, RelayProcess.C1);
            relays.add(relay);
            byName.put(name, relay);
        }
        await("three relays started").atMost(Duration.ofMinutes(4)).until(() -> {
            for (RelayProcess r : relays) {
                assertThat(r.isAlive()).as("relay alive; see %s", r.log()).isTrue();
                if (!r.started()) {
                    return false;
                }
            }
            return true;
        });
        // the hand-over bounds hold against the other forks' JVM start-ups: this JVM (the consumer, MONITOR's reader),
        // the relays and their Redis run at a higher CPU priority than the rest of the pool
        CpuPriority.raiseSelfAnd(
                relays.get(0).pid(), relays.get(1).pid(), relays.get(2).pid(), redis.pid());
        await("three live seats")
                .atMost(Duration.ofSeconds(20))
                .until(() -> seats(keys).size() == 3);
        // every instance renews once more after the third joined, so all three know of each other
        awaitEveryoneRenewedSince(keys, redis.nowMs());

        // 1. steady state: who pops or probes which shard, over 3 s (idle shards are only probed, by their instance's
        // sweep: every max-idle, as these relays poll; KeyspaceShareTest covers the division of notifications), once
        // the hand-over overlap of the joins is over
        Map<Integer, Set<String>> poppers = steadyPoppers(business);
        System.out.println("poppers per shard (steady state): " + poppers);
        assertThat(poppers.keySet())
                .as("every shard popped or probed (polling at max-idle)")
                .hasSize(SHARDS);
        poppers.forEach((shard, who) ->
                assertThat(who).as("instances that popped shard %d", shard).hasSize(1));
        Map<String, TreeSet<Integer>> shardsOf = new TreeMap<>();
        poppers.forEach((shard, who) -> shardsOf.computeIfAbsent(who.iterator().next(), k -> new TreeSet<>())
                .add(shard));
        assertThat(shardsOf).as("each instance pops a third").containsOnlyKeys("A", "B", "C");
        shardsOf.values().forEach(s -> assertThat(s).hasSize(SHARDS / 3));

        List<String> sent = new ArrayList<>();
        Map<String, Long> due = new HashMap<>();

        // 2. kill -9 of C: entries due right after in every shard; C's wait for the hand-over, no longer than the bound
        byName.get("C").kill9();
        long killedAt = redis.nowMs();
        Map<String, Integer> round1 = writeOnePerShard(keys, "kill", killedAt + 300, sent, due);
        List<Received> afterKill = awaitAll(inbox, round1.keySet());
        long worstKill = worstArrival(afterKill, round1, shardsOf.get("C"), killedAt);
        long othersKill = worstArrival(afterKill, round1, union(shardsOf.get("A"), shardsOf.get("B")), killedAt);
        System.out.printf(
                "kill -9 of C: its shards %s relayed at most %d ms after the kill, the others' at most %d ms%n",
                shardsOf.get("C"), worstKill, othersKill);
        assertThat(worstKill)
                .as("C's shards relayed by another instance within the hand-over bound")
                .isLessThanOrEqualTo(HAND_OVER.plus(MARGIN).toMillis());
        assertThat(othersKill).as("the other shards are not held up").isLessThanOrEqualTo(300 + MARGIN.toMillis());

        // 3. SIGSTOP of B (frozen, its seat not renewed): the same for its shards
        Map<Integer, Set<String>> twoLeft = steadyPoppers(business);
        TreeSet<Integer> ofB = new TreeSet<>();
        twoLeft.forEach((shard, who) -> {
            assertThat(who)
                    .as("after C's death, instances that popped shard %d", shard)
                    .hasSize(1);
            if (who.contains("B")) {
                ofB.add(shard);
            }
        });
        assertThat(twoLeft.keySet()).hasSize(SHARDS);
        Shell.run(10, "kill", "-STOP", Long.toString(byName.get("B").pid()));
        long frozenAt = redis.nowMs();
        Map<String, Integer> round2 = writeOnePerShard(keys, "stop", frozenAt + 300, sent, due);
        List<Received> afterStop = awaitAll(inbox, round2.keySet());
        long worstStop = worstArrival(afterStop, round2, ofB, frozenAt);
        System.out.printf("SIGSTOP of B: its shards %s relayed at most %d ms after the stop%n", ofB, worstStop);
        assertThat(worstStop)
                .as("B's shards relayed by A within the hand-over bound")
                .isLessThanOrEqualTo(HAND_OVER.plus(MARGIN).toMillis());

        // 4. B thaws: it draws a new seat and the two divide the shards again
        Shell.run(10, "kill", "-CONT", Long.toString(byName.get("B").pid()));
        await("B back with a new seat")
                .atMost(Duration.ofSeconds(15))
                .until(() -> seats(keys).size() == 2);
        awaitEveryoneRenewedSince(keys, redis.nowMs());
        Map<Integer, Set<String>> thawed = steadyPoppers(business);
        thawed.forEach((shard, who) ->
                assertThat(who).as("after B thawed, shard %d", shard).hasSize(1));
        assertThat(thawed.values().stream()
                        .flatMap(Set::stream)
                        .distinct()
                        .sorted()
                        .toList())
                .containsExactly("A", "B");
        Map<String, Integer> round3 = writeOnePerShard(keys, "thaw", redis.nowMs() + 300, sent, due);
        awaitAll(inbox, round3.keySet());

        Deliveries.Report report = Deliveries.expect(sent)
                .scheduledDue(due)
                .quiet(Duration.ofSeconds(1))
                .check(inbox, Duration.ofSeconds(30));
        report.assertClean();
        assertThat(report.duplicates()).as("delivered twice").isZero();
        FaultFigures.of(
                "8 fleet division: kill -9 and SIGSTOP of a shard's popper",
                report,
                String.format(
                        "handOverBoundMs=%d killHandOverMs=%d stopHandOverMs=%d shardsPerInstance=%d",
                        HAND_OVER.toMillis(), worstKill, worstStop, SHARDS / 3));
    }

    /** One entry per shard, due at {@code dueMs}; returns body -> shard. */
    private Map<String, Integer> writeOnePerShard(
            DelayQueueKeys keys, String tag, long dueMs, List<String> sent, Map<String, Long> due) {
        Map<String, Integer> shardOf = new LinkedHashMap<>();
        try (RedisConnection c = redis.connection()) {
            for (int shard = 0; shard < SHARDS; shard++) {
                String body = "div-" + tag + "-" + shard;
                c.zSetCommands().zAdd(bytes(keys.shard(shard)), dueMs, bytes(body));
                shardOf.put(body, shard);
                sent.add(body);
                due.put(body, dueMs);
            }
        }
        return shardOf;
    }

    private static List<Received> awaitAll(Deliveries.Inbox inbox, Set<String> bodies) throws InterruptedException {
        assertThat(inbox.awaitAll(bodies, HAND_OVER.plus(Duration.ofSeconds(20))))
                .as("all of %s arrived", bodies)
                .isTrue();
        List<Received> got = new ArrayList<>();
        for (Received r : inbox.drain()) {
            if (bodies.contains(r.text())) {
                got.add(r);
            }
        }
        return got;
    }

    /** Latest relayed-at (Redis time) among the bodies of {@code shards}, minus {@code fromMs}. */
    private static long worstArrival(
            List<Received> received, Map<String, Integer> shardOf, Set<Integer> shards, long fromMs) {
        long worst = Long.MIN_VALUE;
        for (Received r : received) {
            Integer shard = shardOf.get(r.text());
            if (shard != null && shards.contains(shard)) {
                worst = Math.max(worst, r.header(RelayHeaders.RELAYED_AT) - fromMs);
            }
        }
        return worst;
    }

    private static TreeSet<Integer> union(Set<Integer> a, Set<Integer> b) {
        TreeSet<Integer> u = new TreeSet<>(a);
        u.addAll(b);
        return u;
    }

    /**
     * The poppers per shard once every shard has one: after a change of the seats each instance pops its former share
     * beside its new one for the hand-over overlap (seat TTL + a renewal period, 4 s), so MONITOR windows of 3 s are
     * taken until one shows a single popper per shard, and that must come within the overlap plus a margin.
     */
    private Map<Integer, Set<String>> steadyPoppers(String business) throws Exception {
        long deadline = System.nanoTime() + OVERLAP.plus(Duration.ofSeconds(20)).toNanos();
        while (true) {
            Map<Integer, Set<String>> poppers = poppersPerShard(business, WINDOW);
            boolean single =
                    poppers.size() == SHARDS && poppers.values().stream().allMatch(who -> who.size() == 1);
            if (single || System.nanoTime() > deadline) {
                return poppers;
            }
            System.out.println("shards still popped by more than one instance (hand-over overlap): " + poppers);
        }
    }

    /**
     * Watches the shared Redis with MONITOR for {@code window}: the scripts run on each shard (EVALSHA naming a shard
     * key of the business among its keys, every shard of a pop of several: with nothing due, the pops; an ack comes
     * from the instance that popped)
     * attributed to relays by their connection's client name.
     */
    private Map<Integer, Set<String>> poppersPerShard(String business, Duration window) throws Exception {
        Path out = Files.createTempFile("division-monitor", ".txt");
        Process monitor = new ProcessBuilder(
                        "redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(redis.port()), "monitor")
                .redirectErrorStream(true)
                .redirectOutput(out.toFile())
                .start();
        Thread.sleep(window.toMillis());
        Map<String, String> names = clientNames();
        monitor.destroy();
        monitor.waitFor(5, TimeUnit.SECONDS);
        String shardPrefix = "delayqueue:" + business + ":";
        Map<Integer, Set<String>> poppers = new TreeMap<>();
        for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            Matcher m = POP.matcher(line);
            int keyCount;
            Matcher arg;
            if (m.find()) {
                keyCount = Integer.parseInt(m.group(2));
                arg = QUOTED.matcher(m.group(3));
            } else {
                // an idle shard is not popped: its sweep probes it (EXISTS of every key of the instance's shards)
                m = PROBE.matcher(line);
                if (!m.find()) {
                    continue;
                }
                keyCount = Integer.MAX_VALUE;
                arg = QUOTED.matcher(m.group(2));
            }
            // a pop (or ack, or probe) of several shards names each shard's keys: attributed to every shard key
            for (int k = 0; k < keyCount && arg.find(); k++) {
                String key = arg.group(1);
                if (!key.startsWith(shardPrefix)) {
                    continue;
                }
                String rest = key.substring(shardPrefix.length());
                if (!rest.matches("[0-9]+")) {
                    continue;
                }
                String who = names.getOrDefault(m.group(1), "unknown " + m.group(1));
                poppers.computeIfAbsent(Integer.parseInt(rest), s -> new TreeSet<>())
                        .add(who);
            }
        }
        Files.deleteIfExists(out);
        return poppers;
    }

    /** addr -> relay name (A, B, C) of the relays' Redis connections, by the client name each one sets. */
    private Map<String, String> clientNames() {
        Map<String, String> names = new HashMap<>();
        try (RedisConnection c = redis.connection()) {
            for (RedisClientInfo info : c.serverCommands().getClientList()) {
                String name = info.getName();
                if (name != null && name.startsWith("division-")) {
                    names.put(info.getAddressPort(), name.substring(name.lastIndexOf('-') + 1));
                }
            }
        }
        return names;
    }

    /**
     * Waits until every seat was renewed after {@code sinceMs} (Redis time): each renewal sets the deadline to now +
     * TTL, so every deadline is then past {@code sinceMs} + TTL.
     */
    private void awaitEveryoneRenewedSince(DelayQueueKeys keys, long sinceMs) {
        await("every seat renewed since " + sinceMs)
                .atMost(SEAT_TTL.plusSeconds(10))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> seats(keys).values().stream()
                        .mapToLong(v -> Long.parseLong(v.substring(v.indexOf(':') + 1)))
                        .allMatch(deadline -> deadline > sinceMs + SEAT_TTL.toMillis()));
    }

    private Map<String, String> seats(DelayQueueKeys keys) {
        Map<String, String> seats = new TreeMap<>();
        try (RedisConnection c = redis.connection()) {
            Map<byte[], byte[]> raw = c.hashCommands().hGetAll(bytes(keys.seats()));
            if (raw != null) {
                raw.forEach((k, v) ->
                        seats.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
            }
        }
        return seats;
    }

    private Map<String, Object> properties(String business, String exchange, String name) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.data.redis.host", "127.0.0.1");
        p.put("spring.data.redis.port", redis.port());
        p.put("spring.data.redis.client-name", "division-" + business + "-" + name);
        p.put("spring.rabbitmq.host", TestServices.rabbit().host());
        p.put("spring.rabbitmq.port", TestServices.rabbit().port());
        String b = "relay.businesses." + business + ".";
        p.put(b + "exchange", exchange);
        p.put(b + "routing-key", "due");
        p.put(b + "shards", SHARDS);
        p.put(b + "threads", 2);
        p.put("relay.division.seat-ttl", SEAT_TTL.toMillis() + "ms");
        // polling at max-idle: with notifications an idle shard is only swept every 5 s, and the 3 s MONITOR window
        // would not see every shard popped
        p.put("relay.wake.keyspace-events", "off");
        return p;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
