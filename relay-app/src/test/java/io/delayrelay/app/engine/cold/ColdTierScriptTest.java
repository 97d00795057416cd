package io.delayrelay.app.engine.cold;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.engine.amqp.EnvelopeCompressionTest;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.zset.Tuple;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cold tier's scripts against the real Redis, one shard: demotion and promotion round trip byte for byte; a cold
 * entry is cancelled, rescheduled and scheduled again through the contract scripts (relay-api's copies) with one live
 * copy and the newest payload; a move cut in half (the relay killed between its steps) loses nothing and leaves no
 * second copy; two movers on the same entries at once leave one copy.
 */
class ColdTierScriptTest {

    private static final long HOUR = 3_600_000L;

    private final RelayTestKit kit = new RelayTestKit();
    private final ColdStore store = new ColdStore(ByteRedisTemplates.create(kit.redisFactory()));
    /** One shard: every id is in shard 0. */
    private final RedisDelayedMessageProducer producer =
            new RedisDelayedMessageProducer(kit.redisFactory(), 1, Duration.ofSeconds(5), DelayQueueKeys::forBusiness);

    private final String business = kit.business("cold");
    private final DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void demotedEntriesComeBackByteForByteAtTheirDueTimes() {
        long now = kit.redisNowMs();
        Map<String, Long> dues = new TreeMap<>();
        for (int i = 0; i < 50; i++) {
            long due = now + HOUR + i * 1_000L;
            producer.scheduleById(business, "order-" + i, message(i, "v1"), Instant.ofEpochMilli(due));
            dues.put("order-" + i, due);
        }
        for (int i = 0; i < 10; i++) {
            long due = now + 2 * HOUR + i;
            producer.schedule(business, bytes("plain-" + i), Instant.ofEpochMilli(due));
            dues.put("plain-" + i, due);
        }
        producer.scheduleById(business, "soon", bytes("{\"soon\":1}"), Instant.ofEpochMilli(now + 30_000));

        ColdStore.Pick pick = store.pick(keys, 0, 60_000, 1_000);
        assertThat(pick.entries()).as("only entries due after cold-after").hasSize(60);
        ColdStore.Demoted demoted = store.demote(keys, 0, pick.entries());

        assertThat(demoted.moved()).isEqualTo(60);
        assertThat(zset(keys.shard(0))).containsOnlyKeys("soon");
        assertThat(hashFields(keys.payloads(0))).containsExactly("soon");
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(60, 1));
        assertThat(producer.cancelById(business, "missing")).isFalse();

        assertThat(store.due(keys, 0, HOUR - 60_000, 10))
                .as("not within the lead yet")
                .isEmpty();
        List<ColdStore.DueBlock> due = store.due(keys, 0, 3 * HOUR, 10);
        assertThat(due).hasSize(1);
        assertThat(store.promote(keys, 0, due.get(0))).isEqualTo(new ColdStore.Promoted(60, 0, false));

        Map<String, Long> hot = zset(keys.shard(0));
        hot.remove("soon");
        assertThat(hot).isEqualTo(dues);
        for (int i = 0; i < 50; i++) {
            assertThat(hget(keys.payloads(0), "order-" + i)).isEqualTo(message(i, "v1"));
        }
        assertThat(hashFields(keys.payloads(0))).hasSize(51);
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(0, 0));
        assertThat(zset(keys.cold(0))).isEmpty();
    }

    /**
     * Intake messages stored compressed go into a block expanded, so the block compresses them together, and come
     * back hot as the envelopes they were; the demotion still moves only entries whose stored (compressed) payload is
     * unchanged.
     */
    @Test
    void compressedIntakeMessagesGoColdExpandedAndComeBackAsTheirEnvelopes() {
        var redis = ByteRedisTemplates.create(kit.redisFactory());
        EnvelopeCompression compression = new EnvelopeCompression(redis, 20);
        ColdStore expanding = new ColdStore(redis, compression::expand);
        long now = kit.redisNowMs();
        java.util.Random random = new java.util.Random(3);
        Map<String, byte[]> envelopes = new TreeMap<>();
        int compressed = 0;
        for (int i = 0; i < 60; i++) {
            byte[] envelope = EnvelopeCompressionTest.envelope(i, random);
            byte[] stored = compression.compress(keys, envelope);
            compressed += EnvelopeCompression.isCompressed(stored) ? 1 : 0;
            producer.scheduleById(business, "order-" + i, stored, Instant.ofEpochMilli(now + HOUR + i));
            envelopes.put("order-" + i, envelope);
        }
        assertThat(compressed).isEqualTo(41);

        ColdStore.Pick pick = expanding.pick(keys, 0, 60_000, 1_000);
        assertThat(expanding.demote(keys, 0, pick.entries()).moved()).isEqualTo(60);
        List<ColdStore.DueBlock> due = expanding.due(keys, 0, 3 * HOUR, 10);
        assertThat(ColdBlock.decode(due.get(0).block()))
                .as("the block holds every message expanded")
                .allSatisfy(e -> assertThat(e.payload())
                        .isEqualTo(envelopes.get(new String(e.member(), StandardCharsets.UTF_8))));
        assertThat(expanding.promote(keys, 0, due.get(0))).isEqualTo(new ColdStore.Promoted(60, 0, false));
        envelopes.forEach(
                (id, envelope) -> assertThat(hget(keys.payloads(0), id)).isEqualTo(envelope));
    }

    /**
     * The scripts call Redis with many members at once in slices of 1000 arguments: a listing of 2,500 and a block of
     * 2,500 (more than the mover's blocks of 1000) cross those slices, and every entry still moves exactly once.
     */
    @Test
    void aBlockOfMoreEntriesThanOneCommandSliceMovesWholeBothWays() {
        long now = kit.redisNowMs();
        Map<String, Long> dues = new TreeMap<>();
        try (RedisConnection c = kit.redis()) {
            for (int i = 0; i < 2_500; i++) {
                long due = now + 5 * HOUR + i * 7L;
                c.zSetCommands().zAdd(bytes(keys.shard(0)), due, bytes("order-" + i));
                c.hashCommands().hSet(bytes(keys.payloads(0)), bytes("order-" + i), message(i, "v1"));
                dues.put("order-" + i, due);
            }
        }
        ColdStore.Pick pick = store.pick(keys, 0, HOUR, 2_500);
        assertThat(pick.entries()).hasSize(2_500);
        assertThat(store.demote(keys, 0, pick.entries()).moved()).isEqualTo(2_500);
        assertThat(zset(keys.shard(0))).isEmpty();
        assertThat(hashFields(keys.payloads(0))).isEmpty();
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(2_500, 1));

        assertThat(producer.cancelById(business, "order-1500")).isTrue();
        producer.rescheduleById(business, "order-2499", Instant.ofEpochMilli(now + 4 * HOUR));
        dues.remove("order-1500");
        dues.put("order-2499", now + 4 * HOUR);

        List<ColdStore.DueBlock> due = store.due(keys, 0, 6 * HOUR, 10);
        assertThat(due).hasSize(1);
        assertThat(store.promote(keys, 0, due.get(0))).isEqualTo(new ColdStore.Promoted(2_499, 1, false));
        assertThat(zset(keys.shard(0))).isEqualTo(dues);
        assertThat(hashFields(keys.payloads(0))).hasSize(2_499);
        assertThat(hget(keys.payloads(0), "order-2001")).isEqualTo(message(2001, "v1"));
        assertThat(hget(keys.payloads(0), "order-2499")).isEqualTo(message(2499, "v1"));
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(0, 0));
    }

    @Test
    void aColdEntryIsCancelledRescheduledAndScheduledAgainThroughTheContractScripts() {
        long now = kit.redisNowMs();
        for (String id : List.of("a", "b", "c", "d")) {
            producer.scheduleById(business, id, bytes(id + "-v1"), Instant.ofEpochMilli(now + 5 * HOUR));
        }
        store.demote(keys, 0, store.pick(keys, 0, HOUR, 100).entries());
        assertThat(zset(keys.shard(0))).isEmpty();

        assertThat(producer.cancelById(business, "a")).isTrue();
        assertThat(producer.cancelById(business, "a")).as("once").isFalse();
        long rescheduled = now + 20_000;
        assertThat(producer.rescheduleById(business, "b", Instant.ofEpochMilli(rescheduled)))
                .isTrue();
        producer.scheduleById(business, "c", bytes("c-v2"), Instant.ofEpochMilli(now + 6 * HOUR));
        assertThat(zset(keys.shard(0)))
                .as("scheduled again: hot, the one live copy")
                .containsOnlyKeys("c");
        assertThat(store.count(keys, 0).entries()).as("b and d").isEqualTo(2);

        // the block's earliest entry is now b's new due time: within a lead of 30 s
        List<ColdStore.DueBlock> due = store.due(keys, 0, 30_000, 10);
        assertThat(due).hasSize(1);
        assertThat(store.promote(keys, 0, due.get(0))).isEqualTo(new ColdStore.Promoted(2, 2, false));

        assertThat(zset(keys.shard(0))).isEqualTo(Map.of("b", rescheduled, "c", now + 6 * HOUR, "d", now + 5 * HOUR));
        assertThat(hget(keys.payloads(0), "b")).isEqualTo(bytes("b-v1"));
        assertThat(hget(keys.payloads(0), "c")).as("newest payload").isEqualTo(bytes("c-v2"));
        assertThat(hget(keys.payloads(0), "a")).isNull();
        assertThat(producer.cancelById(business, "a")).isFalse();
    }

    @Test
    void aMoveCutInHalfLosesNothingAndLeavesOneCopy() {
        long now = kit.redisNowMs();
        for (int i = 0; i < 20; i++) {
            producer.scheduleById(business, "e" + i, bytes("m" + i), Instant.ofEpochMilli(now + 3 * HOUR + i));
        }
        // killed after listing, before demoting: nothing happened
        ColdStore.Pick listed = store.pick(keys, 0, HOUR, 100);
        assertThat(zset(keys.shard(0))).hasSize(20);
        assertThat(store.count(keys, 0).entries()).isZero();

        // a new mover lists again; meanwhile producers change three of the listed entries
        ColdStore.Pick again = store.pick(keys, 0, HOUR, 100);
        producer.rescheduleById(business, "e1", Instant.ofEpochMilli(now + 4 * HOUR));
        producer.scheduleById(business, "e2", bytes("m2-new"), Instant.ofEpochMilli(now + 3 * HOUR + 2));
        producer.cancelById(business, "e3");
        assertThat(store.demote(keys, 0, again.entries()).moved())
                .as("the changed ones stay hot")
                .isEqualTo(17);
        assertThat(zset(keys.shard(0))).isEqualTo(Map.of("e1", now + 4 * HOUR, "e2", now + 3 * HOUR + 2));
        assertThat(hget(keys.payloads(0), "e2")).isEqualTo(bytes("m2-new"));

        // the first mover wakes up and demotes its stale listing: everything it names is gone or changed
        assertThat(store.demote(keys, 0, listed.entries())).isEqualTo(new ColdStore.Demoted(0, 0));
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(17, 1));

        // a promotion listed but never run, then run by another mover, then the first one's late run
        ColdStore.DueBlock block = store.due(keys, 0, 4 * HOUR, 10).get(0);
        assertThat(store.promote(keys, 0, block))
                .as("the block also holds the three changed entries' stale copies: never brought back")
                .isEqualTo(new ColdStore.Promoted(17, 3, false));
        assertThat(store.promote(keys, 0, block)).as("already promoted").isEqualTo(new ColdStore.Promoted(0, 0, true));

        Map<String, Long> hot = zset(keys.shard(0));
        assertThat(hot).hasSize(19).doesNotContainKey("e3");
        for (int i = 0; i < 20; i++) {
            if (i != 3) {
                assertThat(hget(keys.payloads(0), "e" + i)).isEqualTo(bytes(i == 2 ? "m2-new" : "m" + i));
            }
        }
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(0, 0));
    }

    @Test
    void twoMoversDemotingAndPromotingTheSameEntriesAtOnceLeaveOneCopy() throws Exception {
        long now = kit.redisNowMs();
        for (int i = 0; i < 2_000; i++) {
            producer.scheduleById(business, "x" + i, bytes("p" + i), Instant.ofEpochMilli(now + 2 * HOUR + i));
        }
        ColdStore.Pick a = store.pick(keys, 0, HOUR, 2_000);
        ColdStore.Pick b = store.pick(keys, 0, HOUR, 2_000);
        List<Integer> moved =
                race(() -> store.demote(keys, 0, a.entries()).moved(), () -> store.demote(keys, 0, b.entries())
                        .moved());
        // each slice (ColdStore.SLICE entries) is atomic: the two movers may share the slices, never an entry
        assertThat(moved.get(0) + moved.get(1)).isEqualTo(2_000);
        assertThat(store.count(keys, 0).entries()).isEqualTo(2_000);
        assertThat(zset(keys.shard(0))).isEmpty();

        List<ColdStore.DueBlock> blocks = store.due(keys, 0, 3 * HOUR, 10);
        assertThat(blocks).hasSizeBetween(1, 2);
        List<Integer> back = race(
                () -> blocks.stream()
                        .mapToInt(block -> store.promote(keys, 0, block).back())
                        .sum(),
                () -> blocks.stream()
                        .mapToInt(block -> store.promote(keys, 0, block).back())
                        .sum());
        assertThat(back.get(0) + back.get(1)).isEqualTo(2_000);
        assertThat(zset(keys.shard(0))).hasSize(2_000);
        assertThat(hashFields(keys.payloads(0))).hasSize(2_000);
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(0, 0));
    }

    @Test
    void theRelaysIndexPartsAreTheOnesTheContractScriptsCompute() {
        // the relay computes each member's index part (SHA-1 in Java); cancel.lua computes it with sha1hex in Lua
        long now = kit.redisNowMs();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            ids.add(i % 3 == 0 ? "order-" + i : i % 3 == 1 ? "ünïcode-" + i + "-日本" : "x" + i + ":{tag}/" + i);
        }
        for (String id : ids) {
            producer.scheduleById(business, id, bytes("m"), Instant.ofEpochMilli(now + 3 * HOUR));
        }
        // a small shard: fan-out 64
        assertThat(store.demote(keys, 0, store.pick(keys, 0, HOUR, 1_000).entries())
                        .moved())
                .isEqualTo(300);
        for (String id : ids) {
            int part = ColdSlice.part(id.getBytes(StandardCharsets.UTF_8), 64);
            assertThat(hget(keys.coldIndex(0, part), id)).as(id).isNotNull();
        }
        for (String id : ids) {
            assertThat(producer.cancelById(business, id)).as(id).isTrue();
        }
        assertThat(store.count(keys, 0).entries()).isZero();
    }

    /**
     * Members over 32 bytes (a plain ZADD's JSON message, a long id) are indexed by a 9-byte digest, not by themselves:
     * the relay's digest is the one the contract scripts compute, and cancel, reschedule and schedule again still act
     * on exactly their member (requests the promotion applies after matching the whole member).
     */
    @Test
    void longMembersAreIndexedByADigestAndEveryContractCallStillActsOnExactlyThem() {
        long now = kit.redisNowMs();
        Map<String, Long> dues = new TreeMap<>();
        List<String> members = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            String member = "{\"orderId\":" + (100_000 + i) + ",\"userId\":" + (7_000 + i)
                    + ",\"action\":\"cancel-unpaid\",\"currency\":\"EUR\"}";
            members.add(member);
            producer.schedule(business, bytes(member), Instant.ofEpochMilli(now + 3 * HOUR + i));
            dues.put(member, now + 3 * HOUR + i);
        }
        String longId = "order-2026-11-29-0000000000000000000000000001";
        producer.scheduleById(business, longId, bytes("by-id-v1"), Instant.ofEpochMilli(now + 4 * HOUR));
        producer.scheduleById(business, "short-id", bytes("short-v1"), Instant.ofEpochMilli(now + 4 * HOUR));

        assertThat(store.demote(keys, 0, store.pick(keys, 0, HOUR, 1_000).entries())
                        .moved())
                .isEqualTo(42);
        assertThat(zset(keys.shard(0))).isEmpty();
        assertThat(hashAll(keys.coldMeta(0))).containsEntry("fan", "2:64");
        for (String member : members) {
            byte[] digest = ColdSlice.digest(bytes(member));
            assertThat(digest).hasSize(9).startsWith((byte) 0xFF);
            int part = ColdSlice.part(bytes(member), 64);
            assertThat(hget(keys.coldIndex(0, part), digest)).as(member).isEqualTo(bytes("1"));
            assertThat(hget(keys.coldIndex(0, part), bytes(member))).isNull();
        }
        assertThat(hget(keys.coldIndex(0, ColdSlice.part(bytes("short-id"), 64)), bytes("short-id")))
                .as("a short id is its own field")
                .isEqualTo(bytes("1"));
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(42, 1));

        // the Lua digest finds them: cancel, reschedule, schedule again, each on exactly its member
        assertThat(producer.cancel(business, bytes(members.get(0)))).isTrue();
        assertThat(producer.cancel(business, bytes(members.get(0)))).as("once").isFalse();
        assertThat(producer.reschedule(business, bytes(members.get(0)), Instant.ofEpochMilli(now)))
                .as("a cancelled cold entry is not rescheduled")
                .isFalse();
        long sooner = now + 20_000;
        assertThat(producer.reschedule(business, bytes(members.get(1)), Instant.ofEpochMilli(sooner)))
                .isTrue();
        producer.schedule(business, bytes(members.get(2)), Instant.ofEpochMilli(now + 5 * HOUR));
        assertThat(producer.cancelById(business, longId)).isTrue();
        assertThat(producer.cancel(business, bytes(members.get(3) + " ")))
                .as("another member")
                .isFalse();
        dues.remove(members.get(0));
        dues.put(members.get(1), sooner);
        dues.put(members.get(2), now + 5 * HOUR);
        dues.put("short-id", now + 4 * HOUR);
        assertThat(zset(keys.shard(0))).containsOnlyKeys(members.get(2));
        assertThat(hashFields(keys.coldDrop(0)))
                .as("drop requests: cancelled, scheduled again")
                .containsExactlyInAnyOrder(members.get(0), members.get(2), longId);
        assertThat(hashAll(keys.coldMoved(0))).isEqualTo(Map.of(members.get(1), Long.toString(sooner)));
        assertThat(store.count(keys, 0).entries()).as("42 less three dropped").isEqualTo(39);

        List<ColdStore.DueBlock> due = store.due(keys, 0, 30_000, 10);
        assertThat(due).as("the block comes back for the rescheduled entry").hasSize(1);
        assertThat(store.promote(keys, 0, due.get(0))).isEqualTo(new ColdStore.Promoted(39, 3, false));
        assertThat(zset(keys.shard(0))).isEqualTo(dues);
        assertThat(hget(keys.payloads(0), bytes("short-id"))).isEqualTo(bytes("short-v1"));
        assertThat(hget(keys.payloads(0), bytes(longId))).isNull();
        assertThat(hashFields(keys.coldDrop(0))).isEmpty();
        assertThat(hashFields(keys.coldMoved(0))).isEmpty();
        assertThat(hashAll(keys.coldMeta(0)))
                .as("the shard's last block is back: the tier starts anew at its next demotion")
                .isEqualTo(Map.of("seq", "1"));
        assertThat(store.count(keys, 0)).isEqualTo(new ColdStore.Count(0, 0));
    }

    /** A digest already in the index (another cold member's, as a collision would be) keeps the entry hot. */
    @Test
    void aDigestAlreadyIndexedKeepsTheEntryHot() {
        long now = kit.redisNowMs();
        String taken = "{\"orderId\":1,\"note\":\"its digest is already in the index\"}";
        String free = "{\"orderId\":2,\"note\":\"its digest is free, so it goes cold\"}";
        producer.schedule(business, bytes(taken), Instant.ofEpochMilli(now + 3 * HOUR));
        producer.schedule(business, bytes(free), Instant.ofEpochMilli(now + 3 * HOUR + 1));
        byte[] digest = ColdSlice.digest(bytes(taken));
        try (RedisConnection c = kit.redis()) {
            c.hashCommands().hSet(bytes(keys.coldIndex(0, ColdSlice.part(bytes(taken), 64))), digest, bytes("77"));
            c.hashCommands().hSet(bytes(keys.coldMeta(0)), bytes("fan"), bytes("2:64"));
        }
        assertThat(store.demote(keys, 0, store.pick(keys, 0, HOUR, 1_000).entries()))
                .isEqualTo(new ColdStore.Demoted(1, 1));
        assertThat(zset(keys.shard(0))).containsOnlyKeys(taken);
        assertThat(hget(keys.coldIndex(0, ColdSlice.part(bytes(taken), 64)), digest))
                .as("the other entry's field is left as it was")
                .isEqualTo(bytes("77"));
    }

    @Test
    void aMoveCutBetweenSlicesLosesNothingAndLeavesOneCopy() {
        ColdStore sliced = new ColdStore(ByteRedisTemplates.create(kit.redisFactory()), 10);
        long now = kit.redisNowMs();
        Map<String, Long> dues = new TreeMap<>();
        for (int i = 0; i < 35; i++) {
            producer.scheduleById(business, "s" + i, bytes("m" + i), Instant.ofEpochMilli(now + 3 * HOUR + i));
            dues.put("s" + i, now + 3 * HOUR + i);
        }
        ColdStore.Pick pick = sliced.pick(keys, 0, HOUR, 100);
        // killed after 2 of the 4 slices of the block: 20 cold in block 1, 15 still hot
        ColdStore.Demoted half = sliced.demote(keys, 0, pick.entries(), 64, 2);
        assertThat(half).isEqualTo(new ColdStore.Demoted(20, 1));
        assertThat(zset(keys.shard(0))).hasSize(15);
        assertThat(sliced.count(keys, 0)).isEqualTo(new ColdStore.Count(20, 1));
        // the next pass demotes the rest into a block of their own
        assertThat(sliced.demote(keys, 0, sliced.pick(keys, 0, HOUR, 100).entries()))
                .isEqualTo(new ColdStore.Demoted(15, 2));
        assertThat(zset(keys.shard(0))).isEmpty();
        assertThat(sliced.count(keys, 0)).isEqualTo(new ColdStore.Count(35, 2));

        List<ColdStore.DueBlock> due = sliced.due(keys, 0, 4 * HOUR, 10);
        assertThat(due).extracting(ColdStore.DueBlock::id).containsExactlyInAnyOrder("1", "2");
        ColdStore.DueBlock one =
                due.stream().filter(b -> b.id().equals("1")).findFirst().orElseThrow();
        // block 1 holds 35 entries' bytes, 20 of them live: killed after its first slice (up to 10 back)
        ColdStore.Promoted first = sliced.promote(keys, 0, one, 1);
        assertThat(first.back() + sliced.count(keys, 0).entries()).isEqualTo(35);
        assertThat(zset(keys.shard(0))).hasSize(first.back());
        // a cancel between the slices reaches the hot or the cold copy, whichever is live
        assertThat(producer.cancelById(business, "s0")).isTrue();
        dues.remove("s0");
        int back = first.back();
        for (ColdStore.DueBlock block : sliced.due(keys, 0, 4 * HOUR, 10)) {
            back += sliced.promote(keys, 0, block).back();
        }
        assertThat(back).isBetween(34, 35);
        assertThat(zset(keys.shard(0))).isEqualTo(dues);
        assertThat(hashFields(keys.payloads(0))).hasSize(34);
        assertThat(sliced.count(keys, 0)).isEqualTo(new ColdStore.Count(0, 0));
    }

    @Test
    void blocksRoundTripTheirEntries() {
        List<ColdBlock.Entry> entries = new ArrayList<>();
        entries.add(new ColdBlock.Entry(bytes("late"), 9_000_000_000_000L, bytes("{\"x\":1}")));
        entries.add(new ColdBlock.Entry(bytes("plain"), 1_800_000_000_000L, null));
        entries.add(new ColdBlock.Entry(bytes("empty"), 1_800_000_000_001L, new byte[0]));
        List<ColdBlock.Entry> back = ColdBlock.decode(ColdBlock.encode(entries));
        assertThat(back)
                .extracting(e -> new String(e.member(), StandardCharsets.UTF_8))
                .containsExactly("plain", "empty", "late");
        assertThat(back)
                .extracting(ColdBlock.Entry::dueMs)
                .containsExactly(1_800_000_000_000L, 1_800_000_000_001L, 9_000_000_000_000L);
        assertThat(back.get(0).payload()).isNull();
        assertThat(back.get(1).payload()).isEmpty();
        assertThat(back.get(2).payload()).isEqualTo(bytes("{\"x\":1}"));
    }

    private static <T> List<T> race(Callable<T> one, Callable<T> two) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<T> f1 = pool.submit(one);
            Future<T> f2 = pool.submit(two);
            return List.of(f1.get(), f2.get());
        } finally {
            pool.shutdownNow();
        }
    }

    private Map<String, Long> zset(String key) {
        Map<String, Long> out = new TreeMap<>();
        try (RedisConnection c = kit.redis()) {
            for (Tuple t : c.zSetCommands().zRangeWithScores(bytes(key), 0, -1)) {
                out.put(
                        new String(t.getValue(), StandardCharsets.UTF_8),
                        t.getScore().longValue());
            }
        }
        return out;
    }

    private List<String> hashFields(String key) {
        try (RedisConnection c = kit.redis()) {
            return c.hashCommands().hKeys(bytes(key)).stream()
                    .map(k -> new String(k, StandardCharsets.UTF_8))
                    .sorted()
                    .toList();
        }
    }

    private byte[] hget(String key, String field) {
        return hget(key, bytes(field));
    }

    private byte[] hget(String key, byte[] field) {
        try (RedisConnection c = kit.redis()) {
            return c.hashCommands().hGet(bytes(key), field);
        }
    }

    private Map<String, String> hashAll(String key) {
        Map<String, String> out = new TreeMap<>();
        try (RedisConnection c = kit.redis()) {
            c.hashCommands()
                    .hGetAll(bytes(key))
                    .forEach((k, v) ->
                            out.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
        }
        return out;
    }

    private static byte[] message(int i, String version) {
        return bytes("{\"orderId\":" + i + ",\"action\":\"review\",\"v\":\"" + version + "\"}");
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
