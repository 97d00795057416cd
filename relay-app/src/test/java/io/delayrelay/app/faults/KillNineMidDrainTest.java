package io.delayrelay.app.faults;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.Deliveries.Inbox;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.zset.DefaultTuple;
import org.springframework.data.redis.connection.zset.Tuple;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Fault 1: kill -9 of a real relay JVM mid-drain of 200,000 due messages, then a restart. */
@Tag("faults")
class KillNineMidDrainTest {

    static final int MESSAGES = 200_000;
    static final int SHARDS = 16;
    static final int THREADS = 4;
    static final int BATCH = 100;
    /** Batch-sizes of entries a worker may have popped and not yet settled (InFlightBudget.BATCHES_OF_DATA). */
    static final int BATCHES_PER_WORKER = 4;
    /** Most entries one relay holds in flight: what a kill -9 may cause to be delivered twice. */
    static final int WINDOW = THREADS * BATCH * BATCHES_PER_WORKER;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void killNineMidDrainLosesNothingAndDuplicatesAtMostTheInFlightWindow() throws Exception {
        String business = kit.business("kill9");
        String exchange = kit.exchange("kill9");
        Inbox received = new Inbox(kit.consume(kit.queue(exchange, "due")));
        List<String> sent = seed(business);
        Map<String, Object> props = relayProperties(business, exchange);

        long started = System.currentTimeMillis();
        RelayProcess first = RelayProcess.start("kill9-first", props);
        int deliveredAtKill;
        long retriedAtKill;
        long inflightAtKill;
        try {
            await().atMost(Duration.ofMinutes(3))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> received.distinct() >= MESSAGES / 4 || !first.isAlive());
            assertThat(first.isAlive())
                    .as("relay alive until killed; see %s", first.log())
                    .isTrue();
            first.kill9();
            retriedAtKill = first.retriedAfterConfirmTimeout();
            deliveredAtKill = received.distinct();
            inflightAtKill = kit.countAll(business, "inflight");
        } finally {
            first.close();
        }
        System.out.printf(
                "kill -9 after %d ms: %d delivered, %d in flight, %d still scheduled%n",
                System.currentTimeMillis() - started, deliveredAtKill, inflightAtKill, kit.scheduled(business));
        assertThat(inflightAtKill).as("in flight at the kill").isLessThanOrEqualTo(WINDOW);

        long restarted = System.currentTimeMillis();
        try (RelayProcess second = RelayProcess.start("kill9-second", props)) {
            Deliveries.Report drained =
                    Deliveries.expect(sent).quiet(Duration.ofSeconds(2)).await(received, Duration.ofMinutes(5));
            long retried = retriedAtKill + second.retriedAfterConfirmTimeout();
            Deliveries.Report report = Deliveries.expect(sent)
                    .duplicatesAtMost(
                            (int) (WINDOW + retried),
                            "in-flight window " + WINDOW + " x 1 kill -9 + " + retried
                                    + " retried after a confirm timeout")
                    .measure(drained.all());
            long drainMs = System.currentTimeMillis() - restarted;
            kit.awaitInflightSettled(business, Duration.ofSeconds(15));
            FaultFigures.of(
                    "1 kill -9 mid-drain (200k)",
                    report,
                    String.format(
                            "inFlightAtKill=%d deliveredAtKill=%d window=%d restartDrainMs=%d inflightAfter=%d",
                            inflightAtKill, deliveredAtKill, WINDOW, drainMs, kit.countAll(business, "inflight")));
            report.assertClean();
            assertThat(kit.scheduled(business)).isZero();
            assertThat(second.isAlive()).isTrue();
        }
    }

    /** Writes the messages straight into the shards (pipelined ZADD, all due now), as any producer could. */
    private List<String> seed(String business) {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long due = kit.redisNowMs();
        List<String> sent = new ArrayList<>(MESSAGES);
        Map<Integer, Set<Tuple>> byShard = new LinkedHashMap<>();
        try (RedisConnection c = kit.redis()) {
            c.openPipeline();
            for (int i = 0; i < MESSAGES; i++) {
                String body = "k9-" + i;
                sent.add(body);
                byte[] member = body.getBytes(StandardCharsets.UTF_8);
                Set<Tuple> batch = byShard.computeIfAbsent(ShardSelector.shardOf(member, SHARDS), s -> new HashSet<>());
                batch.add(new DefaultTuple(member, (double) (due + i / 1000)));
                if (batch.size() == 1000) {
                    flush(c, keys, byShard);
                }
            }
            flush(c, keys, byShard);
            c.closePipeline();
        }
        assertThat(kit.scheduled(business)).isEqualTo(MESSAGES);
        return sent;
    }

    private static void flush(RedisConnection c, DelayQueueKeys keys, Map<Integer, Set<Tuple>> byShard) {
        byShard.forEach((shard, tuples) -> {
            if (!tuples.isEmpty()) {
                c.zSetCommands().zAdd(DelayQueueKeys.bytes(keys.shard(shard)), Set.copyOf(tuples));
            }
        });
        byShard.clear();
    }

    private static Map<String, Object> relayProperties(String business, String exchange) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.data.redis.host", TestServices.redis().host());
        p.put("spring.data.redis.port", TestServices.redis().port());
        p.put("spring.rabbitmq.host", TestServices.rabbit().host());
        p.put("spring.rabbitmq.port", TestServices.rabbit().port());
        p.put("relay.reaper-interval", "500ms");
        String b = "relay.businesses." + business + ".";
        p.put(b + "exchange", exchange);
        p.put(b + "routing-key", "due");
        p.put(b + "shards", SHARDS);
        p.put(b + "threads", THREADS);
        p.put(b + "batch-size", BATCH);
        p.put(b + "lease", "5s");
        p.put(b + "publish-timeout", "3s");
        return p;
    }
}
