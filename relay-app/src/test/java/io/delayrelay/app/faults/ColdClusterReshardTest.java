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
 * Issue 27 on a Redis Cluster of this test's own: a business with {@code cold-after: 10s} has its entries in cold
 * blocks when the slots of three of its eight shards (the hot keys and the {@code {K:i}:cold-*} keys: one slot through
 * the hash tag) are migrated, key by key, to a master added for it, while the relay runs: it demotes entries a
 * producer keeps writing, and its first promotions come during the last migration. Meanwhile a twentieth of the cold
 * entries are cancelled through relay-api. A call that meets a slot in migration fails (TRYAGAIN: a multi-key call
 * whose keys are partly moved; or a script that meets an undeclared key already moved) and is retried: the relay's
 * mover at its next period (WARN, counted in delay_relay_errors_total), the producer by this test. Every entry not
 * cancelled arrives once, none early, none of the cancelled ones.
 */
@Tag("faults")
@ExtendWith(OutputCaptureExtension.class)
class ColdClusterReshardTest {

    private static final int SHARDS = 8;
    private static final int MOVED_SHARDS = 3;
    private static final int ENTRIES = 3_000;
    private static final int STREAMED = 600;
    private static final int CANCEL_EVERY = 20;
    /** Due 22-52 s after the start: demoted at once, back from 17 s on (lead 5 s). */
    private static final long FIRST_DUE_MS = 22_000;

    private static final long SPREAD_MS = 30_000;
    /** Pause between two keys migrated: a slot of ~70 keys stays in migration ~5 s. */
    private static final long KEY_PAUSE_MS = 80;

    private static final long MIGRATION_AT_MS = 6_000;

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
    void coldShardsMigratedToANewMasterWhileMovingArriveOnceNeverEarlyCancelledNever(CapturedOutput output)
            throws Exception {
        cluster = PrivateRedisCluster.up("cold-reshard");
        int added = cluster.addMaster();
        String business = kit.business("coldreshard");
        String exchange = kit.exchange("coldreshard");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
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
            String id = "reshard-" + i;
            long at = t0 + FIRST_DUE_MS + (long) i * SPREAD_MS / ENTRIES;
            producer.scheduleById(business, id, id, Instant.ofEpochMilli(at));
            due.put(id, at);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> coldEntries(cold, keys) == ENTRIES);
        long allCold = System.currentTimeMillis() - t0;

        // a producer keeps writing entries due 26-46 s after the start: the mover demotes them during the migration
        AtomicInteger retried = new AtomicInteger();
        Map<String, Integer> errors = new ConcurrentHashMap<>();
        AtomicBoolean streaming = new AtomicBoolean(true);
        Thread writer = new Thread(() -> {
            for (int i = 0; i < STREAMED && streaming.get(); i++) {
                String id = "streamed-" + i;
                long at = t0 + 26_000 + (long) i * 20_000 / STREAMED;
                retry(retried, errors, () -> producer.scheduleById(business, id, id, Instant.ofEpochMilli(at)));
                due.put(id, at);
                sleep(20);
            }
        });
        writer.start();

        // every twentieth cold entry of the later half (due 37-52 s after the start) cancelled through relay-api,
        // one every 60 ms, during the migrations (a producer of its own: a cancel that meets a slot in migration is
        // retried until the slot has moved, which holds this one-thread producer up for seconds)
        List<String> toCancel = new ArrayList<>();
        for (int i = ENTRIES / 2; i < ENTRIES; i += CANCEL_EVERY) {
            toCancel.add("reshard-" + i);
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

        // the slots of three shards move to the added master, key by key
        List<Integer> moved = new ArrayList<>();
        // not before 6 s: ~200 keys at 80 ms each then keep slots in migration until after the first promotions (17 s)
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> System.currentTimeMillis() - t0 >= MIGRATION_AT_MS);
        long migrationStart = System.currentTimeMillis() - t0;
        canceller.start();
        int keysMoved = 0;
        for (int shard = 0; shard < SHARDS && moved.size() < MOVED_SHARDS; shard++) {
            int slot = SlotHash.getSlot(keys.shard(shard));
            int from = cluster.masterOf(slot, cluster.ports().get(0));
            if (from == added) {
                continue;
            }
            moved.add(shard);
            cluster.beginMigration(slot, from, added);
            while (cluster.migrateKeys(slot, from, added, 1) > 0) {
                keysMoved++;
                sleep(KEY_PAUSE_MS);
            }
            cluster.endMigration(slot, from, added);
        }
        long migrationEnd = System.currentTimeMillis() - t0;
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
                "12 cold: cluster slots migrated",
                report,
                String.format(
                        "shardsMoved=%s keysMoved=%d allColdMs=%d migrationMs=%d-%d firstPromotionMs=%d cancelled=%d"
                                + " producerRetries=%d producerErrors=%s relayMoveFailures=%d",
                        moved,
                        keysMoved,
                        allCold,
                        migrationStart,
                        migrationEnd,
                        FIRST_DUE_MS - 5_000,
                        cancelled.size(),
                        retried.get(),
                        errors.toString().replace(' ', '_'),
                        moveFailures));
        report.assertClean();
        assertThat(report.all()).extracting(RelayTestKit.Received::text).doesNotContainAnyElementsOf(cancelled);
        assertThat(migrationEnd)
                .as("the last migration ends after promotion began")
                .isGreaterThan(FIRST_DUE_MS - 5_000);
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
