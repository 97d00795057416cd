package io.delayrelay.app.ops;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.ops.WebRelay.Answer;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStringCommands;
import org.springframework.data.redis.core.types.Expiration;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The findings of the console and ops review (2026-11-24), one test each, against the real endpoint on real Redis
 * and RabbitMQ: bodies need a token, listings are bounded, a selector is never implied, operators are named, write
 * logs hold no member, and the small ones (trimmed token, original due time, shared backlog, caps).
 */
@ExtendWith(OutputCaptureExtension.class)
class RelayOpsSafetyTest {

    private static final String ALICE = "alice-token-0123456789";
    private static final String BOB = "bob-token-0123456789ab";

    private final RelayTestKit kit = new RelayTestKit();
    private final List<WebRelay> relays = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        relays.forEach(WebRelay::close);
        kit.close();
    }

    /** S1: for plain-ZADD producers the member is the message: listings need the token, counts stay open. */
    @Test
    void listingsAndSearchNeedAnOperatorTokenWhileCountsStayOpen() {
        String business = kit.business("s1");
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        producer.schedule(
                business,
                "{\"email\":\"ann@example.com\",\"card\":\"4111111111111111\"}",
                Instant.ofEpochMilli(now + 3_600_000));
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("s1"), "due"));
        String base = "/actuator/relay/" + business;

        for (String path : List.of(base + "/peek", base + "/peek?search=%7B%22email%22%3A%22a", base + "/dead")) {
            Answer anonymous = relay.get(path);
            assertThat(anonymous.status()).as(path).isEqualTo(401);
            assertThat(anonymous.text()).as(path).doesNotContain("ann@example.com");
            assertThat(anonymous.json().get("error").asString())
                    .isEqualTo("relay listings show message bodies and need an operator token in the X-Relay-Token"
                            + " header");
            assertThat(relay.get(path, "wrong-token-0123456789").status())
                    .as(path)
                    .isEqualTo(401);
        }
        Answer overview = relay.get("/actuator/relay");
        assertThat(overview.status()).isEqualTo(200);
        assertThat(overview.text()).doesNotContain("ann@example.com");
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(relay.get("/actuator/relay")
                        .json()
                        .get("businesses")
                        .get(business)
                        .get("backlog")
                        .get("scheduled")
                        .asLong())
                .isEqualTo(1));
        Answer operator = relay.get(base + "/peek?search=%7B%22email%22%3A%22a", ALICE);
        assertThat(operator.status()).isEqualTo(200);
        assertThat(operator.json().get("entries").get(0).get("member").asString())
                .contains("ann@example.com");
    }

    /** S1: with no token configured, listings are off like writes (403), the overview still answers. */
    @Test
    void listingsAreDisabledWhenNoTokenIsConfigured() {
        String business = kit.business("s1off");
        WebRelay relay = new WebRelay(
                withIntervals(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("s1off"), "due")));
        relays.add(relay);
        Answer refused = relay.get("/actuator/relay/" + business + "/peek", ALICE);
        assertThat(refused.status()).isEqualTo(403);
        assertThat(refused.json().get("error").asString())
                .isEqualTo("relay listings are disabled (they show message bodies): set relay.ops.token or"
                        + " relay.ops.tokens.<name> to enable them");
        assertThat(relay.get("/actuator/relay/" + business + "/dead").status()).isEqualTo(403);
        assertThat(relay.get("/actuator/relay").status()).isEqualTo(200);
    }

    /** S2: a limit above the cap is refused; a search for a prefix that matches nothing stops at its bound. */
    @Test
    void aListingsCostIsBoundedWhateverTheRequest() {
        String business = kit.business("s2");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long now = kit.redisNowMs();
        // 40,000 entries in one shard: more than one request may scan
        try (RedisConnection c = kit.redis()) {
            c.openPipeline();
            for (int i = 0; i < 40_000; i++) {
                c.zSetCommands().zAdd(bytes(keys.shard(0)), now + 3_600_000 + i, bytes("entry-" + i));
            }
            c.closePipeline();
        }
        WebRelay relay =
                start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("s2"), "due", "shards", 1));
        String base = "/actuator/relay/" + business;
        // a 4 MB payload under an id, due first: its preview is 240 characters, read as at most 964 bytes
        kit.producer()
                .scheduleById(
                        business,
                        "big",
                        "é".repeat(2 * 1024 * 1024).getBytes(StandardCharsets.UTF_8),
                        Instant.ofEpochMilli(now + 1_800_000));
        JsonNode big =
                relay.get(base + "/peek?limit=1", ALICE).json().get("entries").get(0);
        assertThat(big.get("member").asString()).isEqualTo("big");
        assertThat(big.get("payload").asString()).isEqualTo("é".repeat(240) + "…");

        Answer tooMany = relay.get(base + "/peek?limit=10000", ALICE);
        assertThat(tooMany.status()).isEqualTo(400);
        assertThat(tooMany.json().get("error").asString()).isEqualTo("limit must be between 1 and 1000, was 10000");
        Answer most = relay.get(base + "/peek?limit=1000", ALICE);
        assertThat(most.json().get("count").asInt()).isEqualTo(1000);
        assertThat(most.json().get("partial").asBoolean()).isFalse();
        assertThat(most.json().get("entries").get(999).get("member").asString()).isEqualTo("entry-998");

        long started = System.nanoTime();
        Answer nothing = relay.get(base + "/peek?search=no-such-prefix", ALICE);
        long tookMs = (System.nanoTime() - started) / 1_000_000;
        assertThat(nothing.status()).isEqualTo(200);
        assertThat(nothing.json().get("count").asInt()).isZero();
        assertThat(nothing.json().get("partial").asBoolean())
                .as("stopped after %d entries scanned, of 40,000", ListingBudget.MAX_READ)
                .isTrue();
        assertThat(tookMs).as("bounded in time too").isLessThan(ListingBudget.MAX_TIME.toMillis() + 3_000);
    }

    /** O2: a misspelt or missing selector is 400 naming it and purges nothing; "all" must be said. */
    @Test
    void aMissingOrMisspeltSelectorIsRefusedAndAllMustBeSaid() {
        String business = kit.business("o2");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("o2"), "nobody"));
        RedisDelayedMessageProducer producer = kit.producer();
        for (int i = 1; i <= 5; i++) {
            producer.scheduleAfter(business, "d" + i, Duration.ZERO);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> kit.countAll(business, "dead") == 5);
        String base = "/actuator/relay/" + business;

        Answer misspelt = relay.post(base + "/purge", ALICE, "{\"id\":\"d1\"}");
        assertThat(misspelt.status()).isEqualTo(400);
        assertThat(misspelt.json().get("error").asString())
                .isEqualTo("unknown field 'id': a relay write takes member, members, limit, all or by");
        assertThat(relay.post(base + "/purge", ALICE, "{\"Member\":\"d1\"}").status())
                .isEqualTo(400);
        Answer empty = relay.post(base + "/replay", ALICE, "{}");
        assertThat(empty.status()).isEqualTo(400);
        assertThat(empty.json().get("error").asString())
                .isEqualTo("replay needs a selector: \"member\", \"members\" (one a line), \"limit\" (the oldest N)"
                        + " or \"all\": true; nothing was replayed");
        assertThat(relay.post(base + "/purge", ALICE, null).status()).isEqualTo(400);
        assertThat(relay.post(base + "/purge", ALICE, "{\"all\":false}").status())
                .isEqualTo(400);
        assertThat(relay.post(base + "/purge", ALICE, "{\"all\":\"yes\"}").status())
                .isEqualTo(400);
        assertThat(relay.post(base + "/purge", ALICE, "{\"all\":true,\"member\":\"d1\"}")
                        .status())
                .isEqualTo(400);
        Answer noMember = relay.delete(base + "/dead", ALICE);
        assertThat(noMember.status()).isEqualTo(400);
        Answer wrongParameter = relay.delete(base + "/dead?memberId=d1", ALICE);
        assertThat(wrongParameter.status()).isEqualTo(400);
        assertThat(wrongParameter.json().get("error").asString())
                .isEqualTo("unknown parameter 'memberId': use member or all=true");
        assertThat(kit.countAll(business, "dead")).as("nothing purged").isEqualTo(5);

        assertThat(relay.delete(base + "/dead?member=d1", ALICE)
                        .json()
                        .get("purged")
                        .asLong())
                .isEqualTo(1);
        Answer all = relay.post(base + "/purge", ALICE, "{\"all\":true}");
        assertThat(all.status()).isEqualTo(200);
        assertThat(all.json().get("purged").asLong()).isEqualTo(4);
        assertThat(kit.countAll(business, "dead")).isZero();
    }

    /** S5: the audit line names the operator whose token was used and the origin; "by" cannot stand in for it. */
    @Test
    void auditLinesNameTheOperatorAndRefusedTokensAreLoggedRateLimited(CapturedOutput output) {
        String business = kit.business("s5");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("s5"), "due"));
        String base = "/actuator/relay/" + business;

        assertThat(relay.post(base + "/pause", BOB, "{\"by\":\"alice\"}").status())
                .isEqualTo(200);
        JsonNode pause = relay.get("/actuator/relay/" + business).json().get("pause");
        assertThat(pause.get("by").asString()).isEqualTo("bob (alice)");
        assertThat(relay.post(base + "/resume", ALICE, null).status()).isEqualTo(200);
        assertThat(output.getOut())
                .contains("business=" + business + ": paused for every relay instance by bob (alice) from 127.0.0.1")
                .contains("business=" + business + ": resumed for every relay instance by alice from 127.0.0.1");

        assertThat(relay.post(base + "/pause", "guess-0000000000000001", null).status())
                .isEqualTo(401);
        assertThat(relay.post(base + "/pause", "guess-0000000000000002", null).status())
                .isEqualTo(401);
        assertThat(relay.get(base + "/dead").status()).isEqualTo(401);
        List<String> refused = Arrays.stream(output.getOut().split("\n"))
                .filter(l -> l.contains("relay ops:") && l.contains("refused"))
                .toList();
        assertThat(refused).as("one line per 10 s, the next counts the rest").hasSize(1);
        assertThat(refused.get(0))
                .contains(" WARN ")
                .contains("POST /actuator/relay/" + business + "/pause refused, a wrong ops token from 127.0.0.1");
        assertThat(output.getOut()).doesNotContain("guess-000000000000000");
    }

    /** S5: a token shorter than 16 characters stops start-up naming the property, never the value. */
    @Test
    void aShortTokenStopsStartUpNamingThePropertyNotTheValue() {
        String business = kit.business("s5short");
        Map<String, Object> properties =
                withIntervals(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("s5short"), "due"));
        properties.put("relay.ops.tokens.carol", "tooShort-123");
        assertThatThrownBy(() -> relays.add(new WebRelay(properties)))
                .hasStackTraceContaining(
                        "relay.ops.tokens.carol: is 12 characters long; an operator token needs at least 16")
                .satisfies(e -> assertThat(stackTrace(e)).doesNotContain("tooShort-123"));
    }

    /** M3: a token read from a Secret file ends with a newline; it still matches. */
    @Test
    void aConfiguredTokenIsTrimmed() {
        String business = kit.business("m3");
        Map<String, Object> properties =
                withIntervals(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("m3"), "due"));
        properties.put("relay.ops.token", ALICE + "\n");
        WebRelay relay = new WebRelay(properties);
        relays.add(relay);
        assertThat(relay.post("/actuator/relay/" + business + "/pause", ALICE, null)
                        .status())
                .isEqualTo(200);
    }

    /** S6: write log lines name members by reference and length, never in full. */
    @Test
    void writeLogLinesNeverPrintAMember(CapturedOutput output) {
        String business = kit.business("s6");
        RedisDelayedMessageProducer producer = kit.producer();
        String body = "{\"email\":\"ann@example.com\",\"card\":\"4111111111111111\"}";
        producer.schedule(business, body, Instant.ofEpochMilli(kit.redisNowMs() + 3_600_000));
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("s6"), "due"));

        Answer cancelled =
                relay.post("/actuator/relay/" + business + "/cancel", ALICE, "{\"member\":" + quoted(body) + "}");
        assertThat(cancelled.json().get("cancelled").asLong()).isEqualTo(1);
        assertThat(output.getOut())
                .contains("business=" + business + ": 1 scheduled entr(y/ies) cancelled (members [" + AuditRef.of(body)
                        + " (" + body.length() + " B)]) by alice from 127.0.0.1")
                .doesNotContain("ann@example.com");
        assertThat(AuditRef.of(body)).matches("#[0-9a-f]{8}");
    }

    /** M10: members and by are capped. */
    @Test
    void membersAndByAreCapped() {
        String business = kit.business("m10");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("m10"), "due"));
        String base = "/actuator/relay/" + business;
        StringBuilder many = new StringBuilder();
        for (int i = 0; i < 1_001; i++) {
            many.append("m").append(i).append("\\n");
        }
        Answer tooMany = relay.post(base + "/cancel", ALICE, "{\"members\":\"" + many + "\"}");
        assertThat(tooMany.status()).isEqualTo(400);
        assertThat(tooMany.json().get("error").asString())
                .isEqualTo("members names 1001 members; at most 1000 per request");
        Answer longBy = relay.post(base + "/pause", ALICE, "{\"by\":\"" + "x".repeat(65) + "\"}");
        assertThat(longBy.status()).isEqualTo(400);
        assertThat(longBy.json().get("error").asString()).isEqualTo("\"by\" is at most 64 characters, was 65");
        Answer byOnCancel = relay.post(base + "/cancel", ALICE, "{\"member\":\"m1\",\"by\":\"bob\"}");
        assertThat(byOnCancel.status()).isEqualTo(400);
        assertThat(byOnCancel.json().get("error").asString()).isEqualTo("\"by\" is a note for pause and resume only");
        assertThat(relay.get("/actuator/relay/" + business).json().get("paused").asBoolean())
                .isFalse();
    }

    /** M1: a dead letter keeps its original due time, and the endpoint shows it. */
    @Test
    void aDeadLetterShowsItsOriginalDueTime() {
        String business = kit.business("m1");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("m1"), "nobody"));
        long due = kit.redisNowMs() - 5_000;
        kit.producer().schedule(business, "late one", Instant.ofEpochMilli(due));
        await().atMost(Duration.ofSeconds(10)).until(() -> kit.countAll(business, "dead") == 1);

        JsonNode letter = relay.get("/actuator/relay/" + business + "/dead", ALICE)
                .json()
                .get("deadLetters")
                .get(0);
        assertThat(letter.get("originalDueMs").asLong()).isEqualTo(due);
        assertThat(letter.get("originalDueAt").asString())
                .isEqualTo(Instant.ofEpochMilli(due).toString());
        assertThat(letter.get("attempts").asInt()).isEqualTo(1);
        assertThat(letter.get("deadAtMs").asLong()).isGreaterThanOrEqualTo(due + 5_000);
        assertThat(letter.get("ref").asString()).isEqualTo(AuditRef.of("late one"));
    }

    /** M9: the overview takes the fleet's shared backlog sample when there is one. */
    @Test
    void theOverviewReadsTheSharedBacklogSample() {
        String business = kit.business("m9");
        Map<String, Object> properties =
                RelayTestKit.business(kit.baseProperties(), business, kit.exchange("m9"), "due");
        properties.put("relay.ops.token", ALICE);
        properties.put("relay.metrics.sample-interval", "1h");
        WebRelay relay = new WebRelay(properties);
        relays.add(relay);
        byte[] sample = bytes(DelayQueueKeys.forBusiness(business).backlog());
        // the sampler's first round runs as the relay starts: write the fake sample after it
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            try (RedisConnection c = kit.redis()) {
                return c.stringCommands().get(sample) != null;
            }
        });
        long now = kit.redisNowMs();
        try (RedisConnection c = kit.redis()) {
            c.stringCommands()
                    .set(
                            bytes(DelayQueueKeys.forBusiness(business).backlog()),
                            bytes("7 8 9 10 11 " + now),
                            Expiration.milliseconds(60_000),
                            RedisStringCommands.SetOption.upsert());
        }
        JsonNode backlog = relay.get("/actuator/relay")
                .json()
                .get("businesses")
                .get(business)
                .get("backlog");
        assertThat(backlog.get("due").asLong()).isEqualTo(7);
        assertThat(backlog.get("dead").asLong()).isEqualTo(10);
        assertThat(backlog.get("atMs").asLong()).isEqualTo(now);
        assertThat(backlog.get("source").asString()).isEqualTo("shared");
        JsonNode one = relay.get("/actuator/relay/" + business).json().get("backlog");
        assertThat(one.get("due").asLong()).as("one business, read now").isZero();
        assertThat(one.get("source").asString()).isEqualTo("read");
    }

    /** M6: unroutable messages are dead letters, never publish failures: no always-zero series for them. */
    @Test
    void noUnroutablePublishFailureSeriesIsRegistered() {
        String business = kit.business("m6");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("m6"), "due"));
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(
                        relay.get("/actuator/prometheus").text())
                .contains("delay_relay_publish_failures_total{business=\"" + business + "\",cause=\"nack\"}")
                .doesNotContain(
                        "delay_relay_publish_failures_total{business=\"" + business + "\",cause=\"unroutable\"}")
                .contains("delay_relay_dead_lettered_total{business=\"" + business + "\",reason=\"unroutable\"}"));
    }

    /** M12: the console is served with a strict, self-only CSP. */
    @Test
    void theConsoleIsServedWithAStrictContentSecurityPolicy() {
        String business = kit.business("m12");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("m12"), "due"));
        for (String file : List.of("/relay-console/", "/relay-console/console.js", "/relay-console/console.css")) {
            WebRelay.Answer page = relay.get(file);
            assertThat(page.status()).as(file).isEqualTo(200);
            assertThat(page.header("Content-Security-Policy"))
                    .as(file)
                    .isEqualTo("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
                            + " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
            assertThat(page.header("X-Content-Type-Options")).isEqualTo("nosniff");
            assertThat(page.header("Referrer-Policy")).isEqualTo("no-referrer");
        }
    }

    private WebRelay start(Map<String, Object> properties) {
        properties.put("relay.ops.tokens.alice", ALICE);
        properties.put("relay.ops.tokens.bob", BOB);
        WebRelay relay = new WebRelay(withIntervals(properties));
        relays.add(relay);
        return relay;
    }

    private static Map<String, Object> withIntervals(Map<String, Object> properties) {
        properties.put("relay.ops.readiness-check-interval", "100ms");
        properties.put("relay.metrics.sample-interval", "100ms");
        return properties;
    }

    private static String quoted(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String stackTrace(Throwable e) {
        StringWriter out = new StringWriter();
        e.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
