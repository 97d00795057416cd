package io.delayrelay.app.faults;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 5: entries written by other programs. An empty member, a 1 MiB member, non-UTF-8 bytes and a member whose
 * payload hash entry is missing are delivered byte-exact; a string where a shard's zset belongs is set aside; the
 * workers keep running and entries in the other shards keep their lag.
 */
@Tag("faults")
class BadEntriesTest {

    static final int SHARDS = 16;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void foreignEntriesAreDeliveredByteExactAndAForeignKeyStallsNothingElse() throws Exception {
        String business = kit.business("bad-entries");
        String exchange = kit.exchange("bad-entries");
        BlockingQueue<Received> queue = kit.consume(kit.queue(exchange, "due"));
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);

        byte[] big = new byte[1024 * 1024];
        new Random(7).nextBytes(big);
        Map<String, byte[]> bad = new LinkedHashMap<>();
        bad.put("empty member", new byte[0]);
        bad.put("1 MiB member", big);
        bad.put("non-UTF-8 bytes", new byte[] {(byte) 0xff, (byte) 0xfe, 0, (byte) 0x80, (byte) 0xc3, 0x28, '\n', '"'});
        bad.put("id without payload", "ghost-id-17".getBytes(StandardCharsets.UTF_8));
        Set<Integer> used = new TreeSet<>();
        bad.values().forEach(m -> used.add(ShardSelector.shardOf(m, SHARDS)));
        int wrongTypeShard = 0;
        while (used.contains(wrongTypeShard)) {
            wrongTypeShard++;
        }

        ConfigurableApplicationContext context = kit.startRelay(
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "shards", SHARDS, "threads", 2));
        long now = kit.redisNowMs();
        try (RedisConnection c = kit.redis()) {
            c.stringCommands()
                    .set(DelayQueueKeys.bytes(keys.shard(wrongTypeShard)), "written by someone else".getBytes());
            for (byte[] member : bad.values()) {
                c.zSetCommands()
                        .zAdd(
                                DelayQueueKeys.bytes(keys.shard(ShardSelector.shardOf(member, SHARDS))),
                                now + 300,
                                member);
            }
        }
        List<String> fine = new ArrayList<>();
        for (int i = 0; fine.size() < 300; i++) {
            String message = "fine-" + i;
            if (ShardSelector.shardOf(message, SHARDS) != wrongTypeShard) {
                fine.add(message);
            }
        }
        long due = kit.redisNowMs() + 1_000;
        Map<String, Long> dueByBody = new HashMap<>();
        for (int i = 0; i < fine.size(); i++) {
            kit.producer().schedule(business, fine.get(i), Instant.ofEpochMilli(due + i * 10L));
            dueByBody.put(fine.get(i), due + i * 10L);
        }
        List<String> expected = new ArrayList<>(fine);
        bad.values().forEach(member -> expected.add(new String(member, StandardCharsets.UTF_8)));

        Deliveries.Report report = Deliveries.expect(expected)
                .scheduledDue(dueByBody)
                .await(new Deliveries.Inbox(queue), Duration.ofSeconds(20));
        List<Received> all = report.all();
        for (Map.Entry<String, byte[]> entry : bad.entrySet()) {
            assertThat(all.stream()
                            .filter(r -> Arrays.equals(r.body(), entry.getValue()))
                            .count())
                    .as("%s delivered once, byte-exact", entry.getKey())
                    .isEqualTo(1);
        }
        List<Received> fineReceived =
                all.stream().filter(r -> r.text().startsWith("fine-")).toList();
        Deliveries.Report fineReport =
                Deliveries.expect(fine).scheduledDue(dueByBody).measure(fineReceived);
        FaultFigures.of(
                "5 bad entries (other shards' lag)",
                fineReport,
                String.format(
                        "foreignDeliveredByteExact=%d/%d quarantinedShards=%s wrongTypeShard=%d",
                        all.size() - fineReceived.size(),
                        bad.size(),
                        relay(context, business).quarantinedShards(),
                        wrongTypeShard));
        report.assertClean();
        assertThat(fineReport.maxLagMs())
                .as("max lag of entries in the other shards")
                .isLessThan(1_000);
        assertThat(all).hasSize(fine.size() + bad.size());
        // a SET makes no zset notification: the shard is found by a sweep (every max-idle when polling, every
        // safety sweep, 5 s, while the shared Redis has keyspace notifications on)
        int foreignShard = wrongTypeShard;
        await("the foreign key's shard quarantined")
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() ->
                        assertThat(relay(context, business).quarantinedShards()).containsExactly(foreignShard));
        assertThat(relay(context, business).liveWorkers()).isEqualTo(2);
        assertThat(kit.countAll(business, "inflight")).isZero();
        assertThat(kit.countAll(business, "dead")).isZero();
        Received bigOne = all.stream()
                .filter(r -> r.body().length == big.length)
                .findFirst()
                .orElseThrow();
        assertThat(bigOne.header(RelayHeaders.SHARD)).isEqualTo(ShardSelector.shardOf(big, SHARDS));
        System.out.println("non-UTF-8 member delivered as " + HexFormat.of().formatHex(bad.get("non-UTF-8 bytes")));
        try (RedisConnection c = kit.redis()) {
            assertThat(c.stringCommands().get(DelayQueueKeys.bytes(keys.shard(wrongTypeShard))))
                    .as("the foreign key is left alone")
                    .isEqualTo("written by someone else".getBytes());
        }
    }

    private static BusinessRelay relay(ConfigurableApplicationContext context, String business) {
        return context.getBean(RelayEngine.class).relays().get(business);
    }
}
