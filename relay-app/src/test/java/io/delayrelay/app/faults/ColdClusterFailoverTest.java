package io.delayrelay.app.faults;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 27 on a Redis Cluster of this test's own, a master failover during the cold tier's moves: the master serving
 * shard 0 of a business with {@code cold-after: 10s} has a replica (there before the relay starts, as in production);
 * while the relay demotes entries a producer keeps writing and has begun to promote the first blocks, the replica is
 * promoted with {@code CLUSTER FAILOVER}, there and back 11 s apart (the graceful one: the master stops its clients until the replica has every
 * write, then hands over). Scripts are replicated as their effects in MULTI/EXEC, so the replica holds each move
 * whole. Calls that meet the hand-over are retried (the relay's workers and mover at their next iteration, the
 * producer by this test). Every entry not cancelled arrives once, none early, none of the cancelled ones.
 */
@Tag("faults")
@ExtendWith(OutputCaptureExtension.class)
class ColdClusterFailoverTest {

    private static final int SHARDS = 8;
    private static final int ENTRIES = 3_000;
    private static final int STREAMED = 600;
    private static final int CANCEL_EVERY = 20;
    /** Due 22-52 s after the start: demoted at once, back from 17 s on (lead 5 s). */
    private static final long FIRST_DUE_MS = 22_000;

    private static final long SPREAD_MS = 30_000;
    /** The failover: once promotions have begun (first blocks back 17 s after the start). */
    private static final long FAILOVER_AT_MS = 17_500;

    /**
     * Two hand-overs, there and back: a master votes for a replica of the same master at most once per two node
     * timeouts (10 s here), so the second comes 11 s after the first.
     */
    private static final int FAILOVERS = 2;

    private static final long FAILOVER_EVERY_MS = 11_000;

    private final RelayTestKit kit = new RelayTestKit();
    private PrivateRedisCluster cluster;

    @AfterEach
    void cleanUp() {
        try {
            kit.close();
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    @Test
    void coldEntriesThroughAMasterFailoverDuringMovesArriveOnceNeverEarlyCancelledNever(CapturedOutput output)
            throws Exception {
        cluster = PrivateRedisCluster.up("cold-failover");
        String business = kit.business("coldfailover");
        String exchange = kit.exchange("coldfailover");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        int master = cluster.masterOf(
                SlotHash.getSlot(keys.shard(0)), cluster.ports().get(0));
        int replica = cluster.addReplica(master);
        List<Integer> failedOverShards = new ArrayList<>();
        for (int shard = 0; shard < SHARDS; shard++) {
            if (cluster.masterOf(
                            SlotHash.getSlot(keys.shard(shard)), cluster.ports().get(0))
                    == master) {
                failedOverShards.add(shard);
            }
        }
        Deliveries.Inbox inbox = new Deliveries.Inbox(kit.consume(kit.queue(exchange, "due")));
        Map<String, Object> props = kit.baseProperties();
        props.remove("spring.data.redis.host");
        props.remove("spring.data.redis.port");
        props.put("spring.data.redis.cluster.nodes", cluster.nodesProperty());
        RelayTestKit.business(
                props,
                business,
                exchange,
                "due",
                "shards",
                SHARDS,
                "threads",
                2,
                "max-idle",
                "200ms",
                "cold-after",
                "10s");
        kit.startRelay(props);
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                cluster.factory(), SHARDS, Duration.ofMillis(100), DelayQueueKeys::forBusiness);
        ColdStore cold = new ColdStore(ByteRedisTemplates.create(cluster.factory()));

        long t0 = System.currentTimeMillis();
        Map<String, Long> due = new ConcurrentHashMap<>();
        for (int i = 0; i < ENTRIES; i++) {
            String id = "failover-" + i;
            long at = t0 + FIRST_DUE_MS + (long) i * SPREAD_MS / ENTRIES;
            producer.scheduleById(business, id, id, Instant.ofEpochMilli(at));
            due.put(id, at);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> coldEntries(cold, keys) == ENTRIES);
        long allCold = System.currentTimeMillis() - t0;

        // a producer keeps writing entries due 26-46 s after the start: the mover demotes them during the failover
        AtomicInteger retried = new AtomicInteger();
        Map<String, Integer> errors = new ConcurrentHashMap<>();
        AtomicBoolean streaming = new AtomicBoolean(true);
        Thread writer = new Thread(() -> {
            for (int i = 0; i < STREAMED && streaming.get(); i++) {
                String id = "streamed-" + i;
                long at = t0 + 26_000 + (long) i * 20_000 / STREAMED;
                retry(retried, errors, () -> producer.scheduleById(business, id, id, Instant.ofEpochMilli(at)));
                due.put(id, at);
                sleep(30);
            }
        });
        writer.start();

        // every twentieth cold entry of the later half (due 37-52 s after the start) cancelled through relay-api,
        // one every 60 ms, before and during the failover (a producer of its own: a call that meets the hand-over is
        // retried)
        List<String> toCancel = new ArrayList<>();
        for (int i = ENTRIES / 2; i < ENTRIES; i += CANCEL_EVERY) {
            toCancel.add("failover-" + i);
        }
        Set<String> cancelled = ConcurrentHashMap.newKeySet();
        List<String> notCancelled = new java.util.concurrent.CopyOnWriteArrayList<>();
        Thread canceller = new Thread(() -> {
            for (int k = 0; k < toCancel.size(); k++) {
                String id = toCancel.get(k);
                boolean done = retry(retried, errors, () -> producer.cancelById(business, id));
                (done ? cancelled : notCancelled).add(id);
                sleep(60);
            }
        });

        // the replica of shard 0's master takes over while both directions of the moves run
        canceller.start();
        await().atMost(Duration.ofSeconds(FAILOVER_AT_MS / 1000 + 5))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> System.currentTimeMillis() - t0 >= FAILOVER_AT_MS);
        long failoverAt = System.currentTimeMillis() - t0;
        boolean writing = writer.isAlive();
        // the hand-overs: the first meets promotions and demotions, the second promotions
        List<Long> handOverMs = new ArrayList<>();
        int[] pair = {master, replica};
        for (int n = 0; n < FAILOVERS; n++) {
            int next = pair[(n + 1) % 2];
            long at = System.currentTimeMillis() - t0;
            await("replica " + next + " in sync")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> cluster.node(next).info("replication").contains("master_link_status:up"));
            long asked = System.nanoTime();
            cluster.failover(next);
            await("replica " + next + " is master")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> cluster.node(next).info("replication").contains("role:master")
                            && cluster.masterOf(SlotHash.getSlot(keys.shard(0)), next) == next);
            handOverMs.add((System.nanoTime() - asked) / 1_000_000);
            if (n == FAILOVERS - 1) {
                break;
            }
            long nextAt = at + FAILOVER_EVERY_MS;
            await().atMost(Duration.ofMillis(FAILOVER_EVERY_MS + 5_000))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> System.currentTimeMillis() - t0 >= nextAt);
        }
        long failedOver = System.currentTimeMillis() - t0;
        canceller.join(60_000);
        writer.join(60_000);
        streaming.set(false);
        assertThat(canceller.isAlive()).as("the cancels ended").isFalse();
        assertThat(notCancelled)
                .as("cancels of cold entries that found nothing (errors met: %s)", errors)
                .isEmpty();
        assertThat(cancelled).as("cold entries cancelled").hasSize(toCancel.size());
        assertThat(notCancelled)
                .as("cancels of cold entries that found nothing")
                .isEmpty();

        Set<String> live = new HashSet<>(due.keySet());
        live.removeAll(cancelled);
        Deliveries.Report report = Deliveries.expect(live)
                .scheduledDue(new HashMap<>(due))
                .quiet(Duration.ofSeconds(2))
                .await(inbox, Duration.ofSeconds(90));
        long moveFailures = output.getAll()
                .lines()
                .filter(l -> l.contains("cold tier move failed"))
                .count();
        FaultFigures.of(
                "13 cold: cluster master failover",
                report,
                String.format(
                        "failedOverShards=%s allColdMs=%d failoversMs=%d-%d handOversMs=%s firstPromotionMs=%d cancelled=%d"
                                + " producerRetries=%d producerErrors=%s relayMoveFailures=%d",
                        failedOverShards,
                        allCold,
                        failoverAt,
                        failedOver,
                        handOverMs.toString().replace(" ", ""),
                        FIRST_DUE_MS - 5_000,
                        cancelled.size(),
                        retried.get(),
                        errors.toString().replace(' ', '_'),
                        moveFailures));
        report.assertClean();
        assertThat(report.all()).extracting(RelayTestKit.Received::text).doesNotContainAnyElementsOf(cancelled);
        assertThat(failoverAt)
                .as("the failover came after promotion began")
                .isGreaterThanOrEqualTo(FIRST_DUE_MS - 5_000);
        assertThat(writing)
                .as("the failover came while the producer still wrote (demotions)")
                .isTrue();
        assertThat(coldEntries(cold, keys)).isZero();
    }

    /** Runs the call until it does not throw (30 s at most); counts the retries and the errors by kind. */
    private static <T> T retry(AtomicInteger retried, Map<String, Integer> errors, Supplier<T> call) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            try {
                return call.get();
            } catch (RuntimeException e) {
                Throwable t = e;
                while (t.getCause() != null) {
                    t = t.getCause();
                }
                String message = String.valueOf(t.getMessage());
                errors.merge(message.split("[ :]")[0], 1, Integer::sum);
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                retried.incrementAndGet();
                sleep(10);
            }
        }
    }

    private static long coldEntries(ColdStore cold, DelayQueueKeys keys) {
        return ColdRedisRestartTest.coldEntries(cold, keys, SHARDS);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
