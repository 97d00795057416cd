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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ScheduleRequest;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import org.springframework.boot.test.system.CapturedOutput;

import static io.delayrelay.api.DelayQueueKeys.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The scenario the cold tier's Redis Cluster fault tests share (ColdClusterFailoverTest, ColdClusterReshardTest),
 * around the change to the cluster each test makes on its own timeline: a relay on a Redis Cluster of the test's own
 * runs a business of {@value #SHARDS} shards with {@code cold-after: 10s}; {@value #ENTRIES} entries due 22-52 s after
 * the start are all demoted before the test goes on; then a writer thread streams {@value #STREAMED} more (due 26-46 s
 * after the start: the mover demotes them while the cluster changes) and a canceller thread cancels every
 * {@value #CANCEL_EVERY}th entry of the later half (cold, due 37-52 s after the start) through relay-api, one every
 * 60 ms. A call of either that meets the cluster's change is retried (30 s at most), and the retries and the errors
 * by kind are part of the figures. {@link #finish} checks that every cancel found its entry,
 * reports the figures, and that every entry not cancelled arrives once, none early, none of the cancelled ones, and
 * nothing is left cold.
 */
final class ColdClusterScenario implements AutoCloseable {

    static final int SHARDS = 8;
    private static final int ENTRIES = 3_000;
    private static final int STREAMED = 600;
    private static final int WRITE_BATCH = 100;
    private static final int CANCEL_EVERY = 20;
    /** Due 22-52 s after the start: demoted at once, back from 17 s on (lead 5 s). */
    private static final long FIRST_DUE_MS = 22_000;
    /** When the first blocks come back to the hot shards (the lead before the first due), ms after the start. */
    static final long FIRST_PROMOTION_MS = FIRST_DUE_MS - 5_000;

    private static final long SPREAD_MS = 30_000;

    private final PrivateRedisCluster cluster;
    private final RelayTestKit kit;
    private final String idPrefix;
    private final String business;
    private final String exchange;
    private final DelayQueueKeys keys;
    private final Map<String, Long> due = new ConcurrentHashMap<>();
    private final AtomicInteger retried = new AtomicInteger();
    private final Map<String, Integer> errors = new ConcurrentHashMap<>();
    private final AtomicBoolean streaming = new AtomicBoolean(true);
    private final List<String> toCancel = new ArrayList<>();
    private final Set<String> cancelled = ConcurrentHashMap.newKeySet();
    private final List<String> notCancelled = new CopyOnWriteArrayList<>();
    private Deliveries.Inbox inbox;
    private RedisDelayedMessageProducer producer;
    private ColdStore cold;
    private Thread writer;
    /** What ended the writer early (a call still failing after its retries), so that finish() reports it. */
    private final AtomicReference<Throwable> writerFailure = new AtomicReference<>();

    private Thread canceller;
    private long t0;
    private long allColdMs;

    private ColdClusterScenario(PrivateRedisCluster cluster, RelayTestKit kit, String kind) {
        this.cluster = cluster;
        this.kit = kit;
        this.idPrefix = kind + "-";
        this.business = kit.business("cold" + kind);
        this.exchange = kit.exchange("cold" + kind);
        this.keys = DelayQueueKeys.forBusiness(business);
    }

    /**
     * A cluster of the test's own ({@code cold-<kind>}) and the business's names ({@code cold<kind>}, entries
     * {@code <kind>-i}); the relay is not started yet, so the test can shape the cluster first.
     */
    static ColdClusterScenario up(String kind) throws Exception {
        PrivateRedisCluster cluster = PrivateRedisCluster.up("cold-" + kind);
        try {
            return new ColdClusterScenario(cluster, new RelayTestKit(), kind);
        } catch (RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    PrivateRedisCluster cluster() {
        return cluster;
    }

    DelayQueueKeys keys() {
        return keys;
    }

    /** Starts the relay on the cluster, writes the {@value #ENTRIES} entries and waits until all are cold. */
    void startRelayWithColdEntries() {
        inbox = new Deliveries.Inbox(kit.consume(kit.queue(exchange, "due")));
        Map<String, Object> props = kit.baseProperties();
        props.remove("spring.data.redis.host");
        props.remove("spring.data.redis.port");
        props.put("spring.data.redis.cluster.nodes", cluster.nodesProperty());
        ColdFaults.coldBusiness(props, business, exchange, SHARDS);
        kit.startRelay(props);
        producer = new RedisDelayedMessageProducer(
                cluster.factory(), SHARDS, Duration.ofMillis(100), DelayQueueKeys::forBusiness);
        cold = new ColdStore(ByteRedisTemplates.create(cluster.factory()));

        // in batches (one pipeline each): written one by one, the writes and the moves after them took more than
        // 20 s on a CI box busy with the pool's other forks (the first promotion comes at 17 s)
        t0 = System.currentTimeMillis();
        List<ScheduleRequest> batch = new ArrayList<>();
        for (int i = 0; i < ENTRIES; i++) {
            String id = idPrefix + i;
            long at = t0 + FIRST_DUE_MS + (long) i * SPREAD_MS / ENTRIES;
            batch.add(ScheduleRequest.byId(id, bytes(id), Instant.ofEpochMilli(at)));
            due.put(id, at);
            if (batch.size() == WRITE_BATCH || i == ENTRIES - 1) {
                producer.scheduleAll(business, batch);
                batch.clear();
            }
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> coldEntries() == ENTRIES);
        allColdMs = sinceStartMs();
    }

    /** Ms from the first entry written to all {@value #ENTRIES} cold. */
    long allColdMs() {
        return allColdMs;
    }

    /** Ms since the first entry was written. */
    long sinceStartMs() {
        return System.currentTimeMillis() - t0;
    }

    /** Waits until {@code ms} after the start (5 s more at most). */
    void awaitSinceStart(long ms) {
        await().atMost(Duration.ofMillis(Math.max(0, ms - sinceStartMs()) + 5_000))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> sinceStartMs() >= ms);
    }

    /** Starts the writer: the {@value #STREAMED} entries due 26-46 s after the start, one every {@code pauseMs}. */
    void startWriter(long pauseMs) {
        writer = new Thread(() -> {
            for (int i = 0; i < STREAMED && streaming.get(); i++) {
                String id = "streamed-" + i;
                long at = t0 + 26_000 + (long) i * 20_000 / STREAMED;
                retry(() -> producer.scheduleById(business, id, id, Instant.ofEpochMilli(at)));
                due.put(id, at);
                sleep(pauseMs);
            }
        });
        writer.setUncaughtExceptionHandler((t, e) -> writerFailure.set(e));
        writer.start();
    }

    /** Whether the writer still writes. */
    boolean writing() {
        return writer.isAlive();
    }

    /** Starts the canceller (a producer of its own: one thread, a call retried holds it up). */
    void startCanceller() {
        for (int i = ENTRIES / 2; i < ENTRIES; i += CANCEL_EVERY) {
            toCancel.add(idPrefix + i);
        }
        canceller = new Thread(() -> {
            for (String id : toCancel) {
                boolean done = retry(() -> producer.cancelById(business, id));
                (done ? cancelled : notCancelled).add(id);
                sleep(60);
            }
        });
        canceller.start();
    }

    /**
     * Once the test's change to the cluster is over: waits for the writer and the canceller and checks every cancel
     * found its entry, then waits for the deliveries (90 s at most) and reports them with the figures {@code own}
     * (the test's) followed by the scenario's ({@code firstPromotionMs}, cancels, the producer's retries and errors,
     * the relay's failed moves in {@code output}); then checks them: once each, none early, none of the cancelled
     * ones, nothing left cold.
     */
    void finish(CapturedOutput output, String figuresTitle, String own) throws InterruptedException {
        canceller.join(60_000);
        writer.join(60_000);
        streaming.set(false);
        assertThat(canceller.isAlive()).as("the cancels ended").isFalse();
        assertThat(writer.isAlive()).as("the writer ended").isFalse();
        assertThat(writerFailure.get()).as("what ended the writer").isNull();
        assertThat(due).as("entries written, streamed ones included").hasSize(ENTRIES + STREAMED);
        assertThat(notCancelled)
                .as("cancels of cold entries that found nothing (errors met: %s)", errors)
                .isEmpty();
        assertThat(cancelled).as("cold entries cancelled").hasSize(toCancel.size());

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
                figuresTitle,
                report,
                String.format(
                        "%s firstPromotionMs=%d cancelled=%d producerRetries=%d producerErrors=%s relayMoveFailures=%d",
                        own,
                        FIRST_PROMOTION_MS,
                        cancelled.size(),
                        retried.get(),
                        errors.toString().replace(' ', '_'),
                        moveFailures));
        report.assertClean();
        assertThat(report.all()).extracting(RelayTestKit.Received::text).doesNotContainAnyElementsOf(cancelled);
        assertThat(coldEntries()).isZero();
    }

    @Override
    public void close() {
        streaming.set(false);
        try {
            kit.close();
        } finally {
            cluster.close();
        }
    }

    /** Runs the call until it does not throw (30 s at most); counts the retries and the errors by kind. */
    private <T> T retry(Supplier<T> call) {
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

    private long coldEntries() {
        return ColdPlaces.coldEntries(cold, keys, SHARDS);
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
