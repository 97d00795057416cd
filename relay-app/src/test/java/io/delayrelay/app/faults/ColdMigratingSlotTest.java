package io.delayrelay.app.faults;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.cold.ColdBlock;
import io.delayrelay.app.engine.cold.ColdStore;
import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.api.DelayQueueKeys.bytes;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cold tier's scripts on a Redis Cluster slot in the middle of a migration, step by step: the shard's slot is
 * MIGRATING, half of its member index parts already moved to the target, the others and the shard's other keys still
 * on the source (what {@code redis-cli --cluster reshard} leaves between two {@code MIGRATE} batches). A script run
 * on the source then meets keys it did not declare in KEYS (the index parts, named from a declared key's prefix) that
 * are not there: Redis 7 fails the call in the middle of the script ("Script attempted to access a non local key in a
 * cluster node") and keeps what the script wrote before. The scripts must therefore fail before their first write or
 * not at all: every operation tried during the migration either changed nothing (it threw: the caller retries) or
 * did all it says. Checked after the migration, when every key is on the target: each entry in exactly one place,
 * a payload exactly for each hot entry, a demotion all or nothing, a cancel all or nothing, a schedule-again one live
 * copy.
 *
 * <p>The shard also holds an in-flight delivery, an attempts mark and a dead letter (a busy shard): without them the
 * scripts that declare those keys get TRYAGAIN from the source before they run (a multi-key call whose keys are
 * partly missing), which is safe.
 */
@Tag("faults")
class ColdMigratingSlotTest {

    private static final int COLD = 300;
    private static final int HOT = 300;

    private PrivateRedisCluster cluster;

    @AfterEach
    void cleanUp() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void scriptsOnAMigratingSlotChangeNothingOrEverything() throws Exception {
        cluster = PrivateRedisCluster.up("cold-migrating-slot");
        String business = "coldmigrating-" + ProcessHandle.current().pid();
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                cluster.factory(), 1, Duration.ofMillis(100), DelayQueueKeys::forBusiness);
        ColdStore cold = new ColdStore(ByteRedisTemplates.create(cluster.factory()));

        // shard 0: COLD entries demoted into one block, HOT entries still hot; all due in an hour
        long now = System.currentTimeMillis();
        Map<String, String> payload = new LinkedHashMap<>();
        for (int i = 0; i < COLD + HOT; i++) {
            String id = "id-" + i;
            payload.put(id, "v1-" + i);
            producer.scheduleById(business, id, payload.get(id), Instant.ofEpochMilli(now + 3_600_000 + i));
        }
        List<ColdBlock.Entry> first = cold.pick(keys, 0, 60_000, COLD).entries();
        assertThat(first).hasSize(COLD);
        int fan = cold.fanOut(keys, 0);
        assertThat(cold.demote(keys, 0, first, fan).moved()).isEqualTo(COLD);
        Set<String> coldIds = new HashSet<>();
        first.forEach(e -> coldIds.add(new String(e.member(), StandardCharsets.UTF_8)));
        // a busy shard: a delivery in flight, an attempts mark, a dead letter (members of their own)
        try (RedisConnection c = cluster.factory().getConnection()) {
            c.zSetCommands().zAdd(bytes(keys.inflight(0)), now + 3_600_000, bytes("other-inflight"));
            c.hashCommands().hSet(bytes(keys.attempts(0)), bytes("other-inflight"), bytes("1"));
            c.zSetCommands().zAdd(bytes(keys.dead(0)), now, bytes("other-dead"));
            c.hashCommands().hSet(bytes(keys.payloads(0)), bytes("other-inflight"), bytes("x"));
            c.hashCommands().hSet(bytes(keys.payloads(0)), bytes("other-dead"), bytes("y"));
        }

        // the migration, half-way: every even index part on the target, the rest on the source
        int slot = SlotHash.getSlot(keys.shard(0));
        int from = cluster.masterOf(slot, cluster.ports().get(0));
        int to = cluster.ports().stream().filter(p -> p != from).findFirst().orElseThrow();
        cluster.beginMigration(slot, from, to);
        Set<Integer> moved = new HashSet<>();
        for (int part = 0; part < fan; part += 2) {
            String key = keys.coldIndex(0, part);
            if (cluster.node(from).exists(key) == 1) {
                cluster.node(from).migrate("127.0.0.1", to, 0, 10_000, io.lettuce.core.MigrateArgs.Builder.keys(key));
                moved.add(part);
            }
        }
        assertThat(moved).as("index parts moved before the scripts run").isNotEmpty();

        // during the migration: a demotion of the hot entries, cancels, schedules again, reschedules
        Map<String, String> outcome = new LinkedHashMap<>();
        List<ColdBlock.Entry> second = cold.pick(keys, 0, 60_000, HOT).entries();
        assertThat(second).hasSize(HOT);
        String demoted = attempt(
                outcome, "demote", () -> cold.demote(keys, 0, second, fan).moved());
        List<String> coldMoved = pickIds(coldIds, fan, moved, true, 3);
        List<String> coldStayed = pickIds(coldIds, fan, moved, false, 3);
        Set<String> hotIds = new HashSet<>(payload.keySet());
        hotIds.removeAll(coldIds);
        List<String> hotMoved = pickIds(hotIds, fan, moved, true, 3);
        Map<String, String> cancels = new HashMap<>();
        Map<String, String> schedules = new HashMap<>();
        for (String id : List.of(coldMoved.get(0), coldStayed.get(0), hotMoved.get(0))) {
            cancels.put(id, attempt(outcome, "cancel " + id, () -> producer.cancelById(business, id)));
        }
        for (String id : List.of(coldMoved.get(1), coldStayed.get(1), hotMoved.get(1))) {
            schedules.put(
                    id,
                    attempt(
                            outcome,
                            "schedule again " + id,
                            () -> producer.scheduleById(
                                    business, id, "v2-" + id, Instant.ofEpochMilli(now + 7_200_000))));
        }
        for (String id : List.of(coldMoved.get(2), coldStayed.get(2))) {
            attempt(
                    outcome,
                    "reschedule " + id,
                    () -> producer.rescheduleById(business, id, Instant.ofEpochMilli(now + 1_800_000)));
        }

        // the migration ends: every key on the target
        while (cluster.migrateKeys(slot, from, to, 100) > 0) {
            // next batch
        }
        cluster.endMigration(slot, from, to);
        System.out.println("cold migrating slot: " + outcome);

        ColdPlaces.Where where;
        Map<String, String> payloads = new HashMap<>();
        try (RedisConnection c = cluster.factory().getConnection()) {
            where = ColdPlaces.read(c, keys, 1);
            Map<byte[], byte[]> all = c.hashCommands().hGetAll(bytes(keys.payloads(0)));
            all.forEach((k, v) ->
                    payloads.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
        }
        Set<String> expected = new HashSet<>(payload.keySet());
        cancels.forEach((id, result) -> {
            if (result.equals("true")) {
                expected.remove(id);
            }
        });
        Set<String> hot = new HashSet<>(where.hot());
        hot.remove("other-inflight");
        assertThat(where.both())
                .as("entries hot and cold at once (%s)", outcome)
                .isEmpty();
        assertThat(where.orphans())
                .as("entries indexed in a block not stored (%s)", outcome)
                .isEmpty();
        assertThat(where.all())
                .as("live entries: all but the cancels that succeeded (%s)", outcome)
                .containsAll(expected);
        Set<String> live = new HashSet<>(where.all());
        live.removeAll(Set.of("other-inflight"));
        assertThat(live).as("nothing cancelled is live (%s)", outcome).isEqualTo(expected);
        assertThat(where.hotCount() + where.coldCount())
                .as("one copy of each entry")
                .isEqualTo(expected.size() + 1);
        Set<String> withPayload = new HashSet<>(payloads.keySet());
        withPayload.removeAll(Set.of("other-inflight", "other-dead"));
        assertThat(withPayload)
                .as("a payload exactly for each hot entry (%s)", outcome)
                .isEqualTo(hot);
        if (demoted.startsWith("threw")) {
            assertThat(hot).as("a failed demotion left its entries hot").containsAll(ids(second));
        }
        schedules.forEach((id, result) -> {
            if (!result.startsWith("threw")) {
                assertThat(hot).as("%s scheduled again is hot", id).contains(id);
                assertThat(payloads.get(id)).isEqualTo("v2-" + id);
            } else if (coldIds.contains(id)) {
                assertThat(where.cold())
                        .as("%s: a failed schedule again left it cold", id)
                        .contains(id);
            } else {
                assertThat(payloads.get(id))
                        .as("%s: a failed schedule again left its payload", id)
                        .isEqualTo(payload.get(id));
            }
        });
    }

    /**
     * The other side of a migration: the five keys {@code cold-promote.lua} declares have moved to the target, the
     * member index parts not yet. The source answers ASK (none of the declared keys is there), Lettuce resends the
     * script to the target with ASKING, and there a part that is not there yet reads as empty (no error on the
     * importing node). A promotion must then fail before it writes, not delete the block with its entries unread.
     */
    @Test
    void aPromotionSentToTheTargetBeforeTheIndexMovedChangesNothing() throws Exception {
        cluster = PrivateRedisCluster.up("cold-migrating-promote");
        String business = "coldpromote-" + ProcessHandle.current().pid();
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                cluster.factory(), 1, Duration.ofMillis(100), DelayQueueKeys::forBusiness);
        ColdStore cold = new ColdStore(ByteRedisTemplates.create(cluster.factory()));
        long now = System.currentTimeMillis();
        for (int i = 0; i < COLD + HOT; i++) {
            producer.scheduleById(business, "id-" + i, "v1-" + i, Instant.ofEpochMilli(now + 3_600_000 + i));
        }
        int fan = cold.fanOut(keys, 0);
        assertThat(cold.demote(keys, 0, cold.pick(keys, 0, 60_000, COLD).entries(), fan)
                        .moved())
                .isEqualTo(COLD);

        int slot = SlotHash.getSlot(keys.shard(0));
        int from = cluster.masterOf(slot, cluster.ports().get(0));
        int to = cluster.ports().stream().filter(p -> p != from).findFirst().orElseThrow();
        cluster.beginMigration(slot, from, to);
        for (String key :
                List.of(keys.shard(0), keys.payloads(0), keys.cold(0), keys.coldBlocks(0), keys.coldMeta(0))) {
            cluster.node(from).migrate("127.0.0.1", to, 0, 10_000, io.lettuce.core.MigrateArgs.Builder.keys(key));
        }
        Map<String, String> outcome = new LinkedHashMap<>();
        attempt(
                outcome,
                "promote",
                () -> io.delayrelay.app.engine.cold.ColdMover.promoteShard(
                        cold,
                        keys,
                        0,
                        7_200_000,
                        (s, direction, n) -> outcome.merge(direction, String.valueOf(n), (a, b) -> b)));
        while (cluster.migrateKeys(slot, from, to, 100) > 0) {
            // next batch
        }
        cluster.endMigration(slot, from, to);
        System.out.println("cold migrating slot, promotion on the target: " + outcome);

        ColdPlaces.Where where;
        try (RedisConnection c = cluster.factory().getConnection()) {
            where = ColdPlaces.read(c, keys, 1);
        }
        assertThat(where.orphans())
                .as("entries indexed in a block not stored (%s)", outcome)
                .isEmpty();
        assertThat(where.both())
                .as("entries hot and cold at once (%s)", outcome)
                .isEmpty();
        assertThat(where.all()).as("live entries (%s)", outcome).hasSize(COLD + HOT);
        assertThat(where.hotCount() + where.coldCount()).isEqualTo(COLD + HOT);
    }

    private static String attempt(Map<String, String> outcome, String what, Supplier<Object> op) {
        String result;
        try {
            result = String.valueOf(op.get());
        } catch (RuntimeException e) {
            result = "threw " + rootMessage(e);
        }
        outcome.put(what, result);
        return result;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getMessage();
    }

    private static Set<String> ids(List<ColdBlock.Entry> entries) {
        Set<String> ids = new HashSet<>();
        entries.forEach(e -> ids.add(new String(e.member(), StandardCharsets.UTF_8)));
        return ids;
    }

    /** {@code n} of the ids whose index part is (or is not) among the moved parts. */
    private static List<String> pickIds(Set<String> ids, int fan, Set<Integer> moved, boolean inMoved, int n)
            throws Exception {
        List<String> picked = new ArrayList<>();
        for (String id : ids.stream().sorted().toList()) {
            if (moved.contains(part(id, fan)) == inMoved) {
                picked.add(id);
                if (picked.size() == n) {
                    return picked;
                }
            }
        }
        throw new AssertionError("fewer than " + n + " ids with their index part " + (inMoved ? "" : "not ") + "moved");
    }

    /** The member's index part: the first 24 bits of its SHA-1 modulo the fan-out (as the scripts compute it). */
    private static int part(String member, int fan) throws Exception {
        byte[] sha = MessageDigest.getInstance("SHA-1").digest(member.getBytes(StandardCharsets.UTF_8));
        int first24 = ((sha[0] & 0xff) << 16) | ((sha[1] & 0xff) << 8) | (sha[2] & 0xff);
        return first24 % fan;
    }
}
