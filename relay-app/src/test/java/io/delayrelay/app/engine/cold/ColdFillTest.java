package io.delayrelay.app.engine.cold;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The mover waits for a bucket to fill up (a relay in this JVM, the real Redis, {@code cold-after: 10s}: buckets of
 * 2.5 s of due times, a period of 500 ms, a fill wait of 2.5 s): entries that trickle into one bucket over a second go
 * cold as one block, where one block per period used to hold whatever arrived in it; a bulk load goes cold one period
 * after it stops growing.
 */
class ColdFillTest {

    private static final long BUCKET_MS = 2_500;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aTrickleIntoOneBucketGoesColdAsOneBlockAndABulkLoadAtOnce() throws Exception {
        String business = kit.business("coldfill");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        Map<String, Object> p = RelayTestKit.business(
                kit.baseProperties(),
                business,
                kit.exchange("coldfill"),
                "due",
                "paused",
                true,
                "shards",
                1,
                "cold-after",
                "10s");
        kit.startRelay(p);
        RedisDelayedMessageProducer producer = kit.producer();
        ColdStore store = new ColdStore(ByteRedisTemplates.create(kit.redisFactory()));

        // a bulk load into one bucket an hour ahead: one block, as soon as it stopped growing
        long bulkBucket = (kit.redisNowMs() + 3_600_000) / BUCKET_MS + 1;
        for (int i = 0; i < 100; i++) {
            producer.scheduleById(business, "bulk-" + i, message(i), Instant.ofEpochMilli(bulkBucket * BUCKET_MS + i));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> store.count(keys, 0).entries() == 100);
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(100, 1));

        // a trickle into another bucket: 6 writes of 25, 200 ms apart (1 s, against the fill wait of 2.5 s)
        long trickleBucket = bulkBucket + 10;
        for (int w = 0; w < 6; w++) {
            for (int i = 0; i < 25; i++) {
                int n = w * 25 + i;
                producer.scheduleById(
                        business, "trickle-" + n, message(n), Instant.ofEpochMilli(trickleBucket * BUCKET_MS + n));
            }
            Thread.sleep(200);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> store.count(keys, 0).entries() == 250);
        assertThat(store.count(keys, 0))
                .as("the trickle's 150 entries in one block of their own")
                .isEqualTo(new ColdStore.Count(250, 2));
        List<ColdStore.DueBlock> blocks = store.due(keys, 0, 2 * 3_600_000L, 10);
        assertThat(blocks).extracting(b -> ColdBlock.decode(b.block()).size()).containsExactly(100, 150);
    }

    private static byte[] message(int i) {
        return ("{\"order\":" + i + ",\"status\":\"created\"}").getBytes(StandardCharsets.UTF_8);
    }
}
