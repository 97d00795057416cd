package io.delayrelay.app.faults;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.delayrelay.api.DelayQueueKeys;
import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static io.delayrelay.app.faults.ColdClusterScenario.FIRST_PROMOTION_MS;
import static io.delayrelay.app.faults.ColdClusterScenario.SHARDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 27 on a Redis Cluster of this test's own, a master failover during the cold tier's moves: the master serving
 * shard 0 of a business with {@code cold-after: 10s} has a replica (there before the relay starts, as in production);
 * while the relay demotes entries a producer keeps writing and has begun to promote the first blocks, the replica is
 * promoted with {@code CLUSTER FAILOVER}, there and back 11 s apart (the graceful one: the master stops its clients until the replica has every
 * write, then hands over). Scripts are replicated as their effects in MULTI/EXEC, so the replica holds each move
 * whole. Calls that meet the hand-over are retried (the relay's workers and mover at their next iteration, the
 * producer by this test). Every entry not cancelled arrives once, none early, none of the cancelled ones. The load,
 * the cancels and the checks are {@link ColdClusterScenario}'s. Stays long (~60 s): cold-after is at the product's
 * minimum (10 s), and the failovers must meet both demotions and promotions.
 */
@Tag("faults")
@ExtendWith(OutputCaptureExtension.class)
class ColdClusterFailoverTest {

    /** The failover: once promotions have begun (first blocks back 17 s after the start). */
    private static final long FAILOVER_AT_MS = 17_500;

    /**
     * Two hand-overs, there and back: a master votes for a replica of the same master at most once per two node
     * timeouts (10 s here), so the second comes 11 s after the first.
     */
    private static final int FAILOVERS = 2;

    private static final long FAILOVER_EVERY_MS = 11_000;

    private ColdClusterScenario scenario;

    @AfterEach
    void cleanUp() {
        if (scenario != null) {
            scenario.close();
        }
    }

    @Test
    void coldEntriesThroughAMasterFailoverDuringMovesArriveOnceNeverEarlyCancelledNever(CapturedOutput output)
            throws Exception {
        scenario = ColdClusterScenario.up("failover");
        PrivateRedisCluster cluster = scenario.cluster();
        DelayQueueKeys keys = scenario.keys();
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
        scenario.startRelayWithColdEntries();

        // a producer keeps writing entries due 26-46 s after the start: the mover demotes them during the failover
        scenario.startWriter(30);
        // every twentieth cold entry of the later half cancelled through relay-api, before and during the failover
        scenario.startCanceller();

        // the replica of shard 0's master takes over while both directions of the moves run
        scenario.awaitSinceStart(FAILOVER_AT_MS);
        long failoverAt = scenario.sinceStartMs();
        boolean writing = scenario.writing();
        // the hand-overs: the first meets promotions and demotions, the second promotions
        List<Long> handOverMs = new ArrayList<>();
        int[] pair = {master, replica};
        for (int n = 0; n < FAILOVERS; n++) {
            int next = pair[(n + 1) % 2];
            long at = scenario.sinceStartMs();
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
            scenario.awaitSinceStart(at + FAILOVER_EVERY_MS);
        }
        long failedOver = scenario.sinceStartMs();

        scenario.finish(
                output,
                "13 cold: cluster master failover",
                String.format(
                        "failedOverShards=%s allColdMs=%d failoversMs=%d-%d handOversMs=%s",
                        failedOverShards,
                        scenario.allColdMs(),
                        failoverAt,
                        failedOver,
                        handOverMs.toString().replace(" ", "")));
        assertThat(failoverAt).as("the failover came after promotion began").isGreaterThanOrEqualTo(FIRST_PROMOTION_MS);
        assertThat(writing)
                .as("the failover came while the producer still wrote (demotions)")
                .isTrue();
    }
}
