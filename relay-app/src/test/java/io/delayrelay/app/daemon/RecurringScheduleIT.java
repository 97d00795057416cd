package io.delayrelay.app.daemon;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.stream.Collectors;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 42, Done when, with the exec jar as users run it: three instances, three schedules every 1 s (catch-up all,
 * last, none). For 30 s: 30 ± 1 messages per schedule, one per slot, none early. A kill -9 of the instance that pops
 * shard 0 (where the slot entries are, so the one about to fire the next slot), between two slots, loses nothing and
 * doubles nothing but what it held in flight at the kill (the relay's at-least-once window, read from Redis). All
 * instances stopped for 7 s, then started: all fires each missed slot once, last one and counts the others, none
 * none and counts them all. No other message id is ever seen twice.
 */
class RecurringScheduleIT {

    private static final List<String> POLICIES = List.of("all", "last", "none");

    private final RelayTestKit kit = new RelayTestKit();
    private final List<RelayProcess> processes = new ArrayList<>();
    private final List<OpsClient> ops = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        for (RelayProcess p : processes) {
            p.close();
        }
        kit.close();
    }

    @Test
    void oneMessagePerSlotAcrossThreeInstancesAKill9AndAFleetOutageWithEachCatchUpPolicy() throws Exception {
        String business = kit.business("sched");
        String exchange = kit.exchange("sched");
        BlockingQueue<Received> inbox = kit.consume(kit.queue(exchange, "rk"));
        startThree(business, exchange, "a");
        List<Received> all = new ArrayList<>();

        // 1. 30 s of three instances: 30 +- 1 per schedule, one per slot, never early
        all.addAll(RelayTestKit.collect(inbox, 3 * 34, Duration.ofSeconds(34), Duration.ZERO));
        long windowStart = firstSlot(all) + 1_000;
        for (String policy : POLICIES) {
            List<Long> slots = slotsOf(all, policy).stream()
                    .filter(s -> s >= windowStart && s < windowStart + 30_000)
                    .toList();
            assertThat(slots).as("%s: %s", policy, slots).hasSizeBetween(29, 31).doesNotHaveDuplicates();
            assertThat(gaps(slots)).as("%s: no slot missing", policy).isEmpty();
        }
        for (Received r : all) {
            assertThat(r.header(RelayHeaders.RELAYED_AT))
                    .as("never early")
                    .isGreaterThanOrEqualTo(r.header(RelayHeaders.SLOT));
        }

        // 2. kill -9 of the instance that pops shard 0: the others take the shard and the ticks over
        int victim = -1;
        for (int i = 0; i < ops.size() && victim < 0; i++) {
            if (ops.get(i).divisionShards(business).contains(0)) {
                victim = i;
            }
        }
        assertThat(victim).as("an instance pops shard 0").isNotNegative();
        // between two slots (every 1 s on whole seconds): the last slot published and confirmed, the next not yet
        // popped. What the victim still held in flight at the kill is read right after it: the relay is at least once
        // there (docs/schedules.md), so those slots (and only those) may come twice, with their message id. A CI run
        // killed it a few ms after a slot's publish and saw that slot twice
        // (on this machine's clock set to Redis time once: a TIME call per poll took longer than the window in CI)
        long offset = kit.redisNowMs() - System.currentTimeMillis();
        await("between two slots")
                .atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> {
                    long inSecond = Math.floorMod(System.currentTimeMillis() + offset, 1_000L);
                    return inSecond >= 400 && inSecond < 600;
                });
        processes.get(victim).kill9();
        Set<String> inFlightAtKill = inFlight(business);
        System.out.printf(
                "RECURRING kill -9 between slots: %d entries in flight at the kill %s%n",
                inFlightAtKill.size(), inFlightAtKill);
        all.addAll(RelayTestKit.collect(inbox, 3 * 20, Duration.ofSeconds(25), Duration.ZERO));
        for (String policy : POLICIES) {
            // a slot the victim held unpublished comes back once its lease (30 s) ends: later than this collection
            List<Long> firedOrHeld = new ArrayList<>(slotsOf(all, policy));
            inFlightAtKill.stream()
                    .filter(id -> id.startsWith(business + "-" + policy + "@"))
                    .map(id -> Long.parseLong(id.substring(id.lastIndexOf('@') + 1)))
                    .forEach(firedOrHeld::add);
            assertThat(gaps(firedOrHeld.stream().distinct().sorted().toList()))
                    .as("%s after the kill -9: nothing lost", policy)
                    .isEmpty();
        }

        // 3. every instance stopped for 7 s, then three started again
        for (RelayProcess p : processes) {
            p.close();
        }
        all.addAll(drain(inbox));
        long stoppedAt = kit.redisNowMs();
        await("7 s without a relay").atMost(Duration.ofSeconds(10)).until(() -> kit.redisNowMs() >= stoppedAt + 7_000);
        processes.clear();
        ops.clear();
        startThree(business, exchange, "b");
        all.addAll(RelayTestKit.collect(inbox, 3 * 20, Duration.ofSeconds(30), Duration.ofSeconds(2)));

        // the slots in flight at the kill -9 come back when their lease ends, at the first reaper pass after it
        await("the slots in flight at the kill -9 fired")
                .atMost(Duration.ofSeconds(40))
                .until(() -> {
                    all.addAll(drain(inbox));
                    return all.stream()
                            .map(Received::messageId)
                            .collect(Collectors.toSet())
                            .containsAll(inFlightAtKill);
                });
        Map<String, Long> fires =
                all.stream().collect(Collectors.groupingBy(Received::messageId, TreeMap::new, Collectors.counting()));
        fires.forEach((id, n) -> {
            assertThat(n).as("fires of %s", id).isLessThanOrEqualTo(2);
            if (n == 2) {
                assertThat(inFlightAtKill)
                        .as("slot %s fired twice: only one in flight at the kill -9 may", id)
                        .contains(id);
            }
        });
        assertThat(gaps(slotsOf(all, "all"))).as("all: each missed slot fired").isEmpty();
        long skippedLast = skipped(business, "last");
        long skippedNone = skipped(business, "none");
        assertThat(skippedLast).as("the outage was 7 s").isGreaterThanOrEqualTo(4);
        assertThat(gaps(slotsOf(all, "last")))
                .as("last: the latest missed slot fired")
                .containsExactly(skippedLast);
        assertThat(gaps(slotsOf(all, "none"))).as("none: no missed slot fired").containsExactly(skippedNone);
        assertThat(skipped(business, "all")).isZero();
    }

    private void startThree(String business, String exchange, String round) throws Exception {
        for (String name : List.of("1", "2", "3")) {
            Map<String, Object> p = RelayTestKit.business(kit.baseProperties(), business, exchange, "rk", "shards", 2);
            for (String policy : POLICIES) {
                String at = "relay.schedules." + business + "-" + policy + ".";
                p.put(at + "business", business);
                p.put(at + "every", "1s");
                p.put(at + "catch-up", policy);
                p.put(at + "payload", policy);
            }
            p.put("relay.fleet.instance-id", "sched-" + round + name);
            p.put("server.port", FreePort.next());
            int management = FreePort.next();
            p.put("management.server.port", management);
            processes.add(RelayProcess.start("sched-" + round + name, p, true, RelayProcess.C1));
            ops.add(new OpsClient(management, null));
        }
        await("three relays started").atMost(Duration.ofMinutes(4)).until(() -> {
            for (RelayProcess p : processes) {
                assertThat(p.isAlive()).as("relay alive; see %s", p.log()).isTrue();
                if (!p.started()) {
                    return false;
                }
            }
            return true;
        });
    }

    private static long firstSlot(List<Received> all) {
        return all.stream().mapToLong(r -> r.header(RelayHeaders.SLOT)).min().orElseThrow();
    }

    private static List<Long> slotsOf(List<Received> all, String policy) {
        return all.stream()
                .filter(r -> new String(r.body(), StandardCharsets.UTF_8).equals(policy))
                .map(r -> r.header(RelayHeaders.SLOT))
                .sorted()
                .toList();
    }

    /** The slots missing between consecutive fired slots (1 s apart), one count per gap. */
    private static List<Long> gaps(List<Long> slots) {
        List<Long> gaps = new ArrayList<>();
        for (int i = 1; i < slots.size(); i++) {
            long missing = (slots.get(i) - slots.get(i - 1)) / 1000 - 1;
            if (missing > 0) {
                gaps.add(missing);
            }
        }
        return gaps;
    }

    private long skipped(String business, String policy) {
        byte[] key = DelayQueueKeys.bytes(DelayQueueKeys.forBusiness(business).scheduleState());
        try (RedisConnection c = kit.redis()) {
            byte[] v = c.hashCommands().hGet(key, DelayQueueKeys.bytes(business + "-" + policy + ":skipped.catch-up"));
            return v == null ? 0 : Long.parseLong(new String(v, StandardCharsets.UTF_8));
        }
    }

    /** The members of shard 0's in-flight set (the slot entries popped, not yet confirmed): their message ids. */
    private Set<String> inFlight(String business) {
        byte[] key = DelayQueueKeys.bytes(DelayQueueKeys.forBusiness(business).inflight(0));
        try (RedisConnection c = kit.redis()) {
            Set<String> ids = new TreeSet<>();
            for (byte[] member : c.zSetCommands().zRange(key, 0, -1)) {
                ids.add(new String(member, StandardCharsets.UTF_8));
            }
            return ids;
        }
    }

    private static List<Received> drain(BlockingQueue<Received> queue) {
        List<Received> all = new ArrayList<>();
        queue.drainTo(all);
        return all;
    }
}
