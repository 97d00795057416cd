package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.ops.WebRelay.Answer;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 27, "everything keeps working on a cold entry", as an operator and a producer see it: entries demoted by the
 * relay's own cold mover (cold-after 1 h, the business paused so nothing is delivered) are counted by relay-api's
 * {@code count()} and by {@code delay_relay_backlog_messages{state="cold"}}, listed by the ops endpoint's peek in due
 * order after the hot ones and found by its search, marked cold with their payload, at a rescheduled time when they
 * were rescheduled while cold; the endpoint's cancel and deliver-now reach them.
 */
@ExtendWith(OutputCaptureExtension.class)
class ColdVisibilityTest {

    private static final String TOKEN = "cold-tier-ops-token";
    private static final long HOUR = 3_600_000L;

    private final RelayTestKit kit = new RelayTestKit();
    private RedisDelayedMessageProducer producer;
    private WebRelay relay;
    private String business;
    private long now;

    @BeforeEach
    void demoteFortyTwoOfFortySeven() {
        business = kit.business("coldvis");
        String exchange = kit.exchange("coldvis");
        producer = kit.producer();
        now = kit.redisNowMs();
        for (int i = 0; i < 3; i++) {
            producer.schedule(business, "due-" + i, Instant.ofEpochMilli(now - 1_000 - i));
        }
        for (int i = 0; i < 2; i++) {
            producer.schedule(business, "soon-" + i, Instant.ofEpochMilli(now + 10 * 60_000 + i));
        }
        for (int i = 0; i < 40; i++) {
            producer.scheduleById(business, "far-" + i, "{\"n\":" + i + "}", farDue(i));
        }
        producer.schedule(business, "far-message-a", Instant.ofEpochMilli(now + 4 * HOUR));
        producer.schedule(business, "far-message-b", Instant.ofEpochMilli(now + 4 * HOUR + 1));
        Map<String, Object> properties = RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "paused", true, "cold-after", "1h");
        properties.put("relay.ops.token", TOKEN);
        properties.put("relay.metrics.sample-interval", "100ms");
        relay = new WebRelay(properties);
        await().atMost(Duration.ofSeconds(20)).until(() -> cold() == 42);
    }

    @AfterEach
    void cleanUp() {
        if (relay != null) {
            relay.close();
        }
        kit.close();
    }

    @Test
    void producerCountAndBacklogGaugeIncludeColdEntries() {
        assertThat(producer.count(business)).as("5 hot + 42 cold").isEqualTo(47);
        assertThat(producer.peek(business, 100))
                .as("relay-api's peek reads the shard zsets only")
                .hasSize(5);
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(
                        relay.get("/actuator/prometheus").text())
                .contains("delay_relay_backlog_messages{business=\"" + business + "\",state=\"cold\"} 42.0")
                .contains("delay_relay_backlog_messages{business=\"" + business + "\",state=\"scheduled\"} 2.0"));

        assertThat(producer.cancelById(business, "far-3")).isTrue();
        assertThat(producer.count(business)).isEqualTo(46);
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(
                        relay.get("/actuator/prometheus").text())
                .contains("delay_relay_backlog_messages{business=\"" + business + "\",state=\"cold\"} 41.0"));
    }

    @Test
    void peekListsColdEntriesAfterTheHotOnesInDueOrderMarkedCold() {
        JsonNode entries = peek("limit=8");
        assertThat(members(entries))
                .containsExactly("due-2", "due-1", "due-0", "soon-0", "soon-1", "far-0", "far-1", "far-2");
        assertThat(colds(entries)).containsExactly(false, false, false, false, false, true, true, true);
        assertThat(entries.get(5).get("dueAtMs").asLong()).isEqualTo(farDue(0).toEpochMilli());
        assertThat(entries.get(5).get("payload").asString()).isEqualTo("{\"n\":0}");
        assertThat(members(peek("limit=3"))).containsExactly("due-2", "due-1", "due-0");

        // rescheduled while cold: listed at its new time (the index holds it), still cold
        Instant moved = Instant.ofEpochMilli(now + 2 * HOUR);
        assertThat(producer.rescheduleById(business, "far-30", moved)).isTrue();
        JsonNode after = peek("limit=7");
        assertThat(members(after)).containsExactly("due-2", "due-1", "due-0", "soon-0", "soon-1", "far-30", "far-0");
        assertThat(after.get(5).get("dueAtMs").asLong()).isEqualTo(moved.toEpochMilli());
        assertThat(after.get(5).get("cold").asBoolean()).isTrue();

        // the whole backlog: 47 entries, every cold one once, the plain messages last (no payload)
        JsonNode all = peek("limit=100");
        assertThat(all).hasSize(47);
        assertThat(members(all).stream().distinct()).hasSize(47);
        assertThat(colds(all).stream().filter(c -> c)).hasSize(42);
        assertThat(all.get(46).get("member").asString()).isEqualTo("far-message-b");
        assertThat(all.get(46).get("payload").isNull()).isTrue();
    }

    @Test
    void searchFindsColdEntriesByIdAndPrefix() {
        JsonNode exact = peek("search=far-7");
        assertThat(members(exact)).containsExactly("far-7");
        assertThat(exact.get(0).get("cold").asBoolean()).isTrue();
        assertThat(exact.get(0).get("dueAtMs").asLong()).isEqualTo(farDue(7).toEpochMilli());
        assertThat(exact.get(0).get("payload").asString()).isEqualTo("{\"n\":7}");

        assertThat(members(peek("search=far-1&limit=50")))
                .containsExactly(
                        "far-1", "far-10", "far-11", "far-12", "far-13", "far-14", "far-15", "far-16", "far-17",
                        "far-18", "far-19");
        assertThat(members(peek("search=far-1&limit=3"))).containsExactly("far-1", "far-10", "far-11");
        assertThat(members(peek("search=far-message"))).containsExactly("far-message-a", "far-message-b");
        assertThat(members(peek("search=so"))).containsExactly("soon-0", "soon-1");
        assertThat(peek("search=nobody")).isEmpty();

        assertThat(producer.cancelById(business, "far-7")).isTrue();
        assertThat(peek("search=far-7"))
                .as("a cancelled cold entry is not live")
                .isEmpty();
    }

    @Test
    void aSearchFindsAnExactIdWhateverTheBudgetAndSaysWhenAPrefixSearchStoppedEarly() {
        BusinessSpec spec =
                relay.context.getBean(RelayEngine.class).relays().get(business).spec();
        ColdEntries cold = new ColdEntries(ByteRedisTemplates.create(kit.redisFactory()));

        ShardMerge.Found<ColdEntries.Cold> exact = cold.search(spec, spec.shards(), "far-25", 10, oneEntryBudget());
        assertThat(exact.items()).extracting(c -> c.entry().member()).containsExactly("far-25");
        assertThat(exact.items().get(0).entry().dueAtMs()).isEqualTo(farDue(25).toEpochMilli());

        ShardMerge.Found<ColdEntries.Cold> cut = cold.search(spec, spec.shards(), "far-", 50, oneEntryBudget());
        assertThat(cut.partial()).isTrue();
        assertThat(cut.items().size()).isLessThan(42);

        ShardMerge.Found<ColdEntries.Cold> whole = cold.search(spec, spec.shards(), "far-", 50, new ListingBudget());
        assertThat(whole.partial()).isFalse();
        assertThat(whole.items()).hasSize(42);
    }

    @Test
    void aBlockThatCannotBeReadIsLeftOutOfTheListingWithALogLine(CapturedOutput output) {
        JsonNode before = peek("limit=100");
        int shard = before.get(46).get("shard").asInt(); // far-message-b's shard: a block with a plain member
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long inShard = 0;
        for (JsonNode e : before) {
            inShard += e.get("cold").asBoolean() && e.get("shard").asInt() == shard ? 1 : 0;
        }
        List<String> ids = new ArrayList<>();
        try (RedisConnection c = kit.redis()) {
            for (byte[] id : c.zSetCommands().zRange(bytes(keys.cold(shard)), 0, -1)) {
                ids.add(new String(id, StandardCharsets.UTF_8));
                c.hashCommands().hSet(bytes(keys.coldBlocks(shard)), id, bytes("written by another program"));
            }
        }
        assertThat(ids).isNotEmpty();

        JsonNode after = peek("limit=100");
        assertThat(after).hasSize((int) (47 - inShard));
        assertThat(colds(after).stream().filter(c -> c)).hasSize((int) (42 - inShard));
        for (String id : ids) {
            assertThat(output.getOut())
                    .contains("business=" + business + " shard=" + shard + ": cold block " + id
                            + " (26 bytes) left out of a listing, it cannot be read");
        }
    }

    @Test
    void theOperatorsCancelAndDeliverNowReachColdEntries() {
        Answer cancelled = relay.post(
                "/actuator/relay/" + business + "/cancel", TOKEN, "{\"members\": \"far-4\\nfar-message-a\\nnobody\"}");
        assertThat(cancelled.status()).isEqualTo(200);
        assertThat(cancelled.json().get("cancelled").asLong()).isEqualTo(2);
        assertThat(peek("search=far-4")).isEmpty();
        assertThat(peek("search=far-message")).hasSize(1);
        assertThat(cold()).isEqualTo(40);

        long before = kit.redisNowMs();
        Answer now = relay.post("/actuator/relay/" + business + "/deliver-now", TOKEN, "{\"member\": \"far-9\"}");
        assertThat(now.json().get("dueNow").asLong()).isEqualTo(1);
        // the mover brings its block back within a period (1 s): far-9 is hot and due, its block-mates too (hot, at
        // their own times: promotion moves whole blocks)
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            JsonNode found = peek("search=far-9");
            assertThat(members(found)).containsExactly("far-9");
            assertThat(found.get(0).get("cold").asBoolean()).isFalse();
            assertThat(found.get(0).get("dueAtMs").asLong()).isBetween(before, kit.redisNowMs());
            assertThat(found.get(0).get("payload").asString()).isEqualTo("{\"n\":9}");
        });
        assertThat(producer.count(business)).isEqualTo(45);
    }

    /**
     * Members over 32 bytes (a plain ZADD's JSON message) are indexed by digest: found by their exact value, never by
     * a prefix (the search says partial), and the operator's cancel and deliver-now reach them.
     */
    @Test
    void longColdMembersAreFoundExactlyAndReachedByTheOperatorsActions() {
        String first = "{\"orderId\":9000001,\"action\":\"cancel-unpaid\",\"currency\":\"EUR\"}";
        String second = "{\"orderId\":9000002,\"action\":\"cancel-unpaid\",\"currency\":\"EUR\"}";
        producer.schedule(business, first, Instant.ofEpochMilli(now + 5 * HOUR));
        producer.schedule(business, second, Instant.ofEpochMilli(now + 5 * HOUR + 1));
        await().atMost(Duration.ofSeconds(20)).until(() -> cold() == 44);
        BusinessSpec spec =
                relay.context.getBean(RelayEngine.class).relays().get(business).spec();
        ColdEntries cold = new ColdEntries(ByteRedisTemplates.create(kit.redisFactory()));

        ShardMerge.Found<ColdEntries.Cold> exact = cold.search(spec, spec.shards(), first, 10, new ListingBudget());
        assertThat(exact.items()).extracting(c -> c.entry().member()).containsExactly(first);
        assertThat(exact.items().get(0).entry().dueAtMs()).isEqualTo(now + 5 * HOUR);
        ShardMerge.Found<ColdEntries.Cold> byPrefix =
                cold.search(spec, spec.shards(), "{\"orderId\":900000", 10, new ListingBudget());
        assertThat(byPrefix.partial()).as("digests cannot match a prefix").isTrue();

        Answer cancelled = relay.post(
                "/actuator/relay/" + business + "/cancel",
                TOKEN,
                "{\"members\": \"" + first.replace("\"", "\\\"") + "\"}");
        assertThat(cancelled.json().get("cancelled").asLong()).isEqualTo(1);
        assertThat(cold()).isEqualTo(43);
        assertThat(cold.search(spec, spec.shards(), first, 10, new ListingBudget())
                        .items())
                .isEmpty();

        long before = kit.redisNowMs();
        Answer due = relay.post(
                "/actuator/relay/" + business + "/deliver-now",
                TOKEN,
                "{\"member\": \"" + second.replace("\"", "\\\"") + "\"}");
        assertThat(due.json().get("dueNow").asLong()).isEqualTo(1);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            Double score;
            try (RedisConnection c = kit.redis()) {
                score = c.zSetCommands()
                        .zScore(
                                bytes(spec.keys().shard(ShardSelector.shardOf(bytes(second), spec.shards()))),
                                bytes(second));
            }
            assertThat(score).as("back hot, due now").isNotNull();
            assertThat(score.longValue()).isBetween(before, kit.redisNowMs());
        });
        assertThat(producer.count(business)).isEqualTo(47 + 1);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A listing budget spent after one entry read. */
    private static ListingBudget oneEntryBudget() {
        return new ListingBudget(System::nanoTime, 1, Long.MAX_VALUE, Duration.ofMinutes(1));
    }

    private Instant farDue(int i) {
        return Instant.ofEpochMilli(now + 3 * HOUR + i * 1_000L);
    }

    private long cold() {
        Answer answer = relay.get("/actuator/relay/" + business);
        assertThat(answer.status()).isEqualTo(200);
        return answer.json().get("backlog").get("cold").asLong();
    }

    private JsonNode peek(String query) {
        Answer answer = relay.get("/actuator/relay/" + business + "/peek?" + query, TOKEN);
        assertThat(answer.status()).as(answer.text()).isEqualTo(200);
        assertThat(answer.json().get("partial").asBoolean()).isFalse();
        return answer.json().get("entries");
    }

    private static List<String> members(JsonNode entries) {
        List<String> members = new ArrayList<>();
        entries.forEach(e -> members.add(e.get("member").asString()));
        return members;
    }

    private static List<Boolean> colds(JsonNode entries) {
        List<Boolean> colds = new ArrayList<>();
        entries.forEach(e -> colds.add(e.get("cold").asBoolean()));
        return colds;
    }
}
