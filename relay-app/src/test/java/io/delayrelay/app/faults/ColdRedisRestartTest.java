package io.delayrelay.app.faults;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ScheduleRequest;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 27, the cold tier through a Redis crash: the relay's Redis (a server of this test's own, AOF with appendfsync
 * always, its directory under target/) is killed with SIGKILL while the relay promotes a business's cold blocks
 * (some back in the hot shards, some still cold, a hundred cancelled while cold), and restarted from its AOF. Right
 * after the restart every live entry is in exactly one place, hot or cold (a move is one script: the AOF replays it
 * whole or not at all); the relay reconnects, and every entry arrives once, none early, the cancelled ones never.
 *
 * <p>{@code -Dcold.redis-restart.port=N} gives the server a fixed port (a helper session's own, on a shared machine);
 * by default the OS chooses a free one.
 */
@Tag("faults")
class ColdRedisRestartTest {

    private static final int SHARDS = 4;
    private static final int ENTRIES = 2_000;
    private static final int CANCEL_EVERY = 20;
    /** cold-after 10 s: lead 5 s, bucket 2.5 s; entries due in 18-28 s are demoted at once, come back from 13 s on. */
    private static final long FIRST_DUE_MS = 18_000;

    private static final long SPREAD_MS = 10_000;

    private final RelayTestKit kit = new RelayTestKit();
    private PrivateRedis redis;

    @AfterEach
    void cleanUp() {
        try {
            kit.close(); // the relay first: it gives its seat back while its Redis still answers
        } finally {
            if (redis != null) {
                redis.close();
            }
        }
    }

    @Test
    void coldEntriesSurviveARedisKillDuringPromotionOncePerEntryNeverEarly() throws Exception {
        Path dir = ColdFaults.freshDirectory("cold-redis-restart");
        redis = ColdFaults.aofServer(Integer.getInteger("cold.redis-restart.port", 0), dir, "--appendfsync", "always");

        String business = kit.business("coldrestart");
        String exchange = kit.exchange("coldrestart");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        Deliveries.Inbox inbox = new Deliveries.Inbox(kit.consume(kit.queue(exchange, "due")));
        Map<String, Object> props = ColdFaults.relayProperties(kit, redis, business, exchange, SHARDS);
        kit.startRelay(props);

        ColdStore cold = new ColdStore(ByteRedisTemplates.create(redis.factory()));
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                redis.factory(), SHARDS, Duration.ofMillis(100), DelayQueueKeys::forBusiness);
        long start = redis.nowMs();
        Map<String, Long> due = new TreeMap<>();
        // one pipelined batch: 2,000 calls one by one (each fsynced, appendfsync always) took long enough on a busy
        // box that the first entries were less than cold-after ahead when the mover came, and stayed hot
        List<ScheduleRequest> requests = new ArrayList<>();
        for (int i = 0; i < ENTRIES; i++) {
            String id = "restart-" + i;
            long at = start + FIRST_DUE_MS + (i % 1000) * SPREAD_MS / 1000;
            requests.add(ScheduleRequest.byId(id, id.getBytes(StandardCharsets.UTF_8), Instant.ofEpochMilli(at)));
            due.put(id, at);
        }
        producer.scheduleAll(business, requests);
        await().atMost(Duration.ofSeconds(10)).until(() -> coldCount(cold, keys) == ENTRIES);
        Set<String> cancelled = new HashSet<>();
        for (int i = 0; i < ENTRIES; i += CANCEL_EVERY) {
            String id = "restart-" + i;
            assertThat(producer.cancelById(business, id))
                    .as("cancel of cold %s", id)
                    .isTrue();
            cancelled.add(id);
        }
        Set<String> live = new HashSet<>(due.keySet());
        live.removeAll(cancelled);
        assertThat(coldCount(cold, keys)).isEqualTo(live.size());

        // the kill: once the first blocks are back in the hot shards and others are still cold, before anything is due
        await().pollInterval(Duration.ofMillis(20))
                .atMost(Duration.ofSeconds(FIRST_DUE_MS / 1000))
                .until(() -> hot(keys) > 0);
        long hotAtKill = hot(keys);
        long coldAtKill = coldCount(cold, keys);
        assertThat(redis.nowMs())
                .as("killed before the first entry is due (%d hot, %d cold)", hotAtKill, coldAtKill)
                .isLessThan(start + FIRST_DUE_MS - 1_000);
        assertThat(coldAtKill).as("some entries still cold at the kill").isPositive();
        redis.kill9();
        redis.restart();

        // the first read Redis answers once it has replayed the AOF (LOADING until then)
        ColdPlaces.Where after = ColdPlaces.readOnceLoaded(
                        "the restarted server", redis, keys, SHARDS, Duration.ofSeconds(30))
                .assertEachInOnePlace("after the AOF replay");
        assertThat(after.all())
                .as(
                        "live entries after the AOF replay (hot %d, cold %d)",
                        after.hot().size(), after.cold().size())
                .isEqualTo(live);
        System.out.printf(
                "cold redis restart: killed with %d hot and %d cold, AOF replayed %d hot and %d cold%n",
                hotAtKill, coldAtKill, after.hot().size(), after.cold().size());

        Deliveries.Report report = Deliveries.expect(live)
                .scheduledDue(due)
                .quiet(Duration.ofSeconds(2))
                .check(inbox, Duration.ofSeconds(60));
        System.out.println("cold redis restart: " + report);
        assertThat(coldCount(cold, keys)).isZero();
        assertThat(hot(keys)).isZero();
    }

    private static long coldCount(ColdStore cold, DelayQueueKeys keys) {
        return ColdPlaces.coldEntries(cold, keys, SHARDS);
    }

    private long hot(DelayQueueKeys keys) {
        long n = 0;
        try (RedisConnection c = redis.connection()) {
            for (int s = 0; s < SHARDS; s++) {
                Long size = c.zSetCommands().zCard(DelayQueueKeys.bytes(keys.shard(s)));
                n += size == null ? 0 : size;
            }
        }
        return n;
    }
}
