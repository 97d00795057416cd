package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One pop of several shards hands its batch to the shards in order until it is used up; the shards it left out go
 * first in the next pop. With a fixed order (the shards that came back full first, then by index) a backlog in the
 * first shards kept the last ones waiting: in a CI run one shard of 16 waited 8 s while the others were on time.
 */
class SharedBatchFairnessTest {

    private static final int SHARDS = 8;
    private static final int PER_SHARD = 300;
    private static final int BATCH = 20;

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void shardsLeftOutOfAUsedUpBatchGoFirstInTheNextPop() throws Exception {
        String business = kit.business("fair");
        String exchange = kit.exchange("fair");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        kit.startRelay(RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", SHARDS, "threads", 1, "batch-size", BATCH));
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                kit.redisFactory(), SHARDS, Duration.ofMillis(100), DelayQueueKeys::forBusiness);

        // PER_SHARD messages in every shard, all due at the same instant: a backlog of 15 batches per shard
        Instant due = Instant.ofEpochMilli(kit.redisNowMs() + 3_000);
        int[] written = new int[SHARDS];
        for (int i = 0; min(written) < PER_SHARD; i++) {
            byte[] message = ("fair-" + i).getBytes(StandardCharsets.UTF_8);
            int shard = ShardSelector.shardOf(message, SHARDS);
            if (written[shard] < PER_SHARD) {
                producer.schedule(business, message, due);
                written[shard]++;
            }
        }

        List<Received> first = RelayTestKit.collect(received, SHARDS * BATCH, Duration.ofSeconds(30), Duration.ZERO);
        assertThat(first).hasSize(SHARDS * BATCH);
        Map<Integer, Integer> perShard = new TreeMap<>();
        for (Received r : first) {
            perShard.merge(ShardSelector.shardOf(r.body(), SHARDS), 1, Integer::sum);
        }
        System.out.println("shards of the first " + first.size() + " deliveries: " + perShard);
        // one batch per pop, each shard once in turn: the first 8 batches come from 8 different shards (with the
        // fixed order all 160 came from the first shard, whose 15 batches went out before any other shard's)
        assertThat(perShard)
                .as("every shard served within the first %d pops", SHARDS)
                .hasSize(SHARDS);
        assertThat(new ArrayList<>(perShard.values()))
                .as("no shard took more than two of the first %d batches", SHARDS)
                .allSatisfy(n -> assertThat(n).isLessThanOrEqualTo(2 * BATCH));
    }

    private static int min(int[] counts) {
        int min = Integer.MAX_VALUE;
        for (int c : counts) {
            min = Math.min(min, c);
        }
        return min;
    }
}
