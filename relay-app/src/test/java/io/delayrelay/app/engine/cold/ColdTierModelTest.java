package io.delayrelay.app.engine.cold;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.support.RelayTestKit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.zset.Tuple;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A model test of the cold tier, apart from {@code ContractModelTest} (which drives the hot contract): random
 * sequences of producer calls through relay-api (the contract scripts: schedule by id and by message, cancel,
 * reschedule) and of the cold moves, whole and cut in half (a listing kept and demoted later, stale; a due-block
 * listing kept and promoted later, after another mover promoted it), on one shard of the real Redis. After every step
 * the entries Redis holds, hot ({@code K:i} and payloads) and live cold (decoded blocks the member index points at,
 * at the rescheduled time if any), equal the model: each member at most once, at its newest due time, with its newest
 * message; and every producer reply is the model's. Due times are hours ahead, so the relay's pops play no part.
 */
class ColdTierModelTest {

    private static final long HOUR = 3_600_000L;
    private static final int MEMBERS = 5;

    private static RelayTestKit kit;
    private static ColdStore store;
    private static RedisDelayedMessageProducer producer;

    @BeforeContainer
    static void connect() {
        kit = new RelayTestKit();
        store = new ColdStore(ByteRedisTemplates.create(kit.redisFactory()));
        producer = new RedisDelayedMessageProducer(
                kit.redisFactory(), 1, Duration.ofSeconds(5), DelayQueueKeys::forBusiness);
    }

    @AfterContainer
    static void close() {
        kit.close();
    }

    /** One step: what, which member (index), which due time (hours ahead, as a step of 30 min), which listing. */
    record Step(String what, int member, int halfHours, int which) {
        @Override
        public String toString() {
            return what + "(" + member + ", +" + halfHours * 30 + "min, #" + which + ")";
        }
    }

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<String> what = Arbitraries.of(
                "scheduleById",
                "scheduleById",
                "scheduleMessage",
                "cancel",
                "reschedule",
                "pick",
                "demote",
                "demote",
                "listDue",
                "promote",
                "promoteAll");
        return Combinators.combine(
                        what,
                        Arbitraries.integers().between(0, MEMBERS - 1),
                        Arbitraries.integers().between(1, 12),
                        Arbitraries.integers().between(0, 2))
                .as(Step::new)
                .list()
                .ofMinSize(1)
                .ofMaxSize(40);
    }

    @Property(tries = 60)
    void hotAndColdTogetherHoldWhatTheModelHolds(@ForAll("steps") List<Step> steps) {
        World w = new World(kit.business("coldmodel"));
        try {
            for (Step step : steps) {
                w.apply(step);
                w.check(step);
            }
        } finally {
            w.delete();
        }
    }

    /** Redis (one shard of one business) and the model, side by side. */
    private static final class World {
        final String business;
        final DelayQueueKeys keys;
        final long base;
        /** member -> {due, payload or null}: the live entries. */
        final Map<String, Object[]> model = new TreeMap<>();

        final List<ColdStore.Pick> picks = new ArrayList<>();
        final List<ColdStore.DueBlock> listedBlocks = new ArrayList<>();
        int version;

        World(String business) {
            this.business = business;
            this.keys = DelayQueueKeys.forBusiness(business);
            this.base = kit.redisNowMs() + 2 * HOUR;
        }

        void apply(Step s) {
            // odd members are over 32 bytes: indexed by digest, their cold changes are requests (docs/cold-tier.md)
            boolean longer = s.member() % 2 == 1;
            String id = longer ? "an-order-id-longer-than-32-bytes-" + s.member() : "id" + s.member();
            String message = longer
                    ? "{\"orderId\":" + s.member() + ",\"action\":\"cancel-unpaid\",\"sku\":\"SKU-1\"}"
                    : "msg" + s.member();
            long due = base + s.halfHours() * HOUR / 2;
            switch (s.what()) {
                case "scheduleById" -> {
                    byte[] payload = bytes("{\"v\":" + ++version + "}");
                    producer.scheduleById(business, id, payload, Instant.ofEpochMilli(due));
                    model.put(id, new Object[] {due, payload});
                }
                case "scheduleMessage" -> {
                    producer.schedule(business, bytes(message), Instant.ofEpochMilli(due));
                    model.put(message, new Object[] {due, null});
                }
                case "cancel" -> {
                    String member = s.which() == 0 ? message : id;
                    boolean removed = member.equals(id)
                            ? producer.cancelById(business, id)
                            : producer.cancel(business, bytes(message));
                    assertThat(removed).as("cancel %s", member).isEqualTo(model.remove(member) != null);
                }
                case "reschedule" -> {
                    String member = s.which() == 0 ? message : id;
                    boolean moved = member.equals(id)
                            ? producer.rescheduleById(business, id, Instant.ofEpochMilli(due))
                            : producer.reschedule(business, bytes(message), Instant.ofEpochMilli(due));
                    Object[] entry = model.get(member);
                    assertThat(moved).as("reschedule %s", member).isEqualTo(entry != null);
                    if (entry != null) {
                        entry[0] = due;
                    }
                }
                    // cold-after 1 h: every entry (due 2.5 h .. 8 h ahead) may be demoted
                case "pick" -> picks.add(store.pick(keys, 0, HOUR, 1_000));
                case "demote" -> {
                    ColdStore.Pick pick = picks.isEmpty() || s.which() == 0
                            ? store.pick(keys, 0, HOUR, 1_000)
                            : picks.remove(Math.min(s.which(), picks.size()) - 1);
                    if (!pick.entries().isEmpty()) {
                        store.demote(keys, 0, pick.entries());
                    }
                }
                case "listDue" -> listedBlocks.addAll(store.due(keys, 0, s.halfHours() * HOUR, 10));
                case "promote" -> {
                    if (!listedBlocks.isEmpty()) {
                        store.promote(keys, 0, listedBlocks.remove(s.which() % listedBlocks.size()));
                    }
                }
                case "promoteAll" -> {
                    for (ColdStore.DueBlock b : store.due(keys, 0, 100 * HOUR, 1_000)) {
                        store.promote(keys, 0, b);
                    }
                }
                default -> throw new IllegalArgumentException(s.what());
            }
        }

        void check(Step after) {
            Map<String, Object[]> seen = new TreeMap<>();
            Map<String, String> where = new HashMap<>();
            try (RedisConnection c = kit.redis()) {
                for (Tuple t : c.zSetCommands().zRangeWithScores(bytes(keys.shard(0)), 0, -1)) {
                    String member = text(t.getValue());
                    byte[] payload = c.hashCommands().hGet(bytes(keys.payloads(0)), t.getValue());
                    seen.put(member, new Object[] {t.getScore().longValue(), payload});
                    where.put(member, "hot");
                }
                List<byte[]> payloadFields = new ArrayList<>(c.hashCommands().hKeys(bytes(keys.payloads(0))));
                assertThat(payloadFields.stream()
                                .map(ColdTierModelTest::text)
                                .sorted()
                                .toList())
                        .as("after %s: payloads exactly of the hot ids", after)
                        .isEqualTo(seen.entrySet().stream()
                                .filter(e -> e.getValue()[1] != null)
                                .map(Map.Entry::getKey)
                                .sorted()
                                .toList());
                byte[] fan = c.hashCommands().hGet(bytes(keys.coldMeta(0)), bytes("fan"));
                Map<byte[], byte[]> blocks = c.hashCommands().hGetAll(bytes(keys.coldBlocks(0)));
                long live = 0;
                long dropped = 0;
                for (Map.Entry<byte[], byte[]> block : blocks.entrySet()) {
                    String blockId = text(block.getKey());
                    assertThat(c.zSetCommands().zScore(bytes(keys.cold(0)), block.getKey()))
                            .as("after %s: block %s listed in %s", after, blockId, keys.cold(0))
                            .isNotNull();
                    for (ColdBlock.Entry e : ColdBlock.decode(block.getValue())) {
                        String member = text(e.member());
                        int part = part(
                                member,
                                Integer.parseInt(text(fan).substring(text(fan).indexOf(':') + 1)));
                        boolean digested = ColdSlice.digested(e.member());
                        byte[] field = digested ? ColdSlice.digest(e.member()) : e.member();
                        byte[] at = c.hashCommands().hGet(bytes(keys.coldIndex(0, part)), field);
                        String[] pointer = at == null ? new String[] {""} : text(at).split(":");
                        if (!pointer[0].equals(blockId)) {
                            continue;
                        }
                        byte[] moved = null;
                        if (digested) {
                            assertThat(pointer)
                                    .as("after %s: a digest field holds a block id", after)
                                    .hasSize(1);
                            if (c.hashCommands().hGet(bytes(keys.coldDrop(0)), e.member()) != null) {
                                dropped++;
                                continue;
                            }
                            moved = c.hashCommands().hGet(bytes(keys.coldMoved(0)), e.member());
                        }
                        live++;
                        long due = moved != null
                                ? Long.parseLong(text(moved))
                                : pointer.length > 1 ? Long.parseLong(pointer[1]) : e.dueMs();
                        assertThat(where.put(member, "cold " + blockId))
                                .as("after %s: %s has one live copy", after, member)
                                .isNull();
                        seen.put(member, new Object[] {due, e.payload()});
                        Double score = c.zSetCommands().zScore(bytes(keys.cold(0)), block.getKey());
                        assertThat(score.longValue())
                                .as("after %s: block %s comes back no later than %s needs", after, blockId, member)
                                .isLessThanOrEqualTo(due);
                    }
                }
                assertThat(store.count(keys, 0).entries())
                        .as("after %s: cold count", after)
                        .isEqualTo(live);
                // every request names a member whose digest points at a block holding it: none is left behind
                assertThat(c.hashCommands().hLen(bytes(keys.coldDrop(0))))
                        .as("after %s: drop requests", after)
                        .isEqualTo(dropped);
                if (fan == null) {
                    assertThat(blocks)
                            .as("after %s: blocks without a fan-out", after)
                            .isEmpty();
                    assertThat(c.keyCommands().exists(bytes(keys.coldMoved(0))))
                            .as("after %s: moved requests without a cold tier", after)
                            .isFalse();
                }
            }
            assertThat(describe(seen))
                    .as("after %s: hot + live cold entries", after)
                    .isEqualTo(describe(model));
        }

        void delete() {
            try (RedisConnection c = kit.redis()) {
                for (String key : kit.keysOf(business)) {
                    c.keyCommands().del(bytes(key));
                }
            }
        }
    }

    private static Map<String, String> describe(Map<String, Object[]> entries) {
        Map<String, String> out = new TreeMap<>();
        entries.forEach((member, e) -> out.put(member, e[0] + " " + (e[1] == null ? "-" : text((byte[]) e[1]))));
        return out;
    }

    /** The index part of a member, as the scripts compute it: first 24 bits of SHA-1 mod the fan-out. */
    static int part(String member, int fan) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-1").digest(bytes(member));
            int first24 = ((h[0] & 0xff) << 16) | ((h[1] & 0xff) << 8) | (h[2] & 0xff);
            return first24 % fan;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
