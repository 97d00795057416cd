package io.delayrelay.app.faults;

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

/**
 * Issue 27 on a Redis Cluster of this test's own: a business with {@code cold-after: 10s} has its entries in cold
 * blocks when the slots of three of its eight shards (the hot keys and the {@code {K:i}:cold-*} keys: one slot through
 * the hash tag) are migrated, key by key, to a master added for it, while the relay runs: it demotes entries a
 * producer keeps writing, and its first promotions come during the last migration. Meanwhile a twentieth of the cold
 * entries are cancelled through relay-api. A call that meets a slot in migration fails (TRYAGAIN: a multi-key call
 * whose keys are partly moved; or a script that meets an undeclared key already moved) and is retried: the relay's
 * mover at its next period (WARN, counted in delay_relay_errors_total), the producer by this test. Every entry not
 * cancelled arrives once, none early, none of the cancelled ones. The load, the cancels and the checks are
 * {@link ColdClusterScenario}'s. Stays long (~60 s): cold-after is at the product's minimum (10 s), and the migrations
 * must meet both demotions and promotions.
 */
@Tag("faults")
@ExtendWith(OutputCaptureExtension.class)
class ColdClusterReshardTest {

    private static final int MOVED_SHARDS = 3;
    /** Pause between two keys migrated: a slot of ~70 keys stays in migration ~5 s. */
    private static final long KEY_PAUSE_MS = 80;

    private static final long MIGRATION_AT_MS = 6_000;

    private ColdClusterScenario scenario;

    @AfterEach
    void cleanUp() {
        if (scenario != null) {
            scenario.close();
        }
    }

    @Test
    void coldShardsMigratedToANewMasterWhileMovingArriveOnceNeverEarlyCancelledNever(CapturedOutput output)
            throws Exception {
        scenario = ColdClusterScenario.up("reshard");
        PrivateRedisCluster cluster = scenario.cluster();
        int added = cluster.addMaster();
        DelayQueueKeys keys = scenario.keys();
        scenario.startRelayWithColdEntries();

        // a producer keeps writing entries due 26-46 s after the start: the mover demotes them during the migration
        scenario.startWriter(20);

        // the slots of three shards move to the added master, key by key
        List<Integer> moved = new ArrayList<>();
        // not before 6 s: ~200 keys at 80 ms each then keep slots in migration until after the first promotions (17 s)
        scenario.awaitSinceStart(MIGRATION_AT_MS);
        long migrationStart = scenario.sinceStartMs();
        // every twentieth cold entry of the later half cancelled through relay-api during the migrations (a cancel
        // that meets a slot in migration is retried until the slot has moved, which holds the canceller up for seconds)
        scenario.startCanceller();
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
                ColdClusterScenario.sleep(KEY_PAUSE_MS);
            }
            cluster.endMigration(slot, from, added);
        }
        long migrationEnd = scenario.sinceStartMs();

        scenario.finish(
                output,
                "12 cold: cluster slots migrated",
                String.format(
                        "shardsMoved=%s keysMoved=%d allColdMs=%d migrationMs=%d-%d",
                        moved, keysMoved, scenario.allColdMs(), migrationStart, migrationEnd));
        assertThat(migrationEnd)
                .as("the last migration ends after promotion began")
                .isGreaterThan(FIRST_PROMOTION_MS);
    }
}
