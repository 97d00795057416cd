package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.ops.WebRelay.Answer;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(OutputCaptureExtension.class)
class RelayOpsEndpointTest {

    private static final String TOKEN = "s3cret-ops-token";

    private final RelayTestKit kit = new RelayTestKit();
    private final List<WebRelay> relays = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        relays.forEach(WebRelay::close);
        kit.close();
    }

    @Test
    void readsConfigShardsAndBacklogPerBusinessAndPeeksTheNextDueEntries() {
        String business = kit.business("opsread");
        String exchange = kit.exchange("opsread");
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        producer.schedule(business, "first", Instant.ofEpochMilli(now - 3_000));
        producer.schedule(business, "second", Instant.ofEpochMilli(now - 2_000));
        producer.schedule(business, "third", Instant.ofEpochMilli(now - 1_000));
        producer.schedule(business, "later-1", Instant.ofEpochMilli(now + 3_600_000));
        producer.schedule(business, "later-2", Instant.ofEpochMilli(now + 3_600_001));
        WebRelay relay = start(RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "paused", true, "threads", 3, "batch-size", 7));

        Answer all = relay.get("/actuator/relay");
        assertThat(all.status()).isEqualTo(200);
        assertThat(all.json().get("running").asBoolean()).isTrue();
        assertThat(all.json().get("writeEnabled").asBoolean()).isTrue();
        JsonNode view = all.json().get("businesses").get(business);
        assertThat(view.get("paused").asBoolean()).isTrue();
        assertThat(view.get("shards").asInt()).isEqualTo(16);
        assertThat(view.get("scanWidth").asInt()).isEqualTo(16);
        assertThat(view.get("config").get("exchange").asString()).isEqualTo(exchange);
        assertThat(view.get("config").get("routingKey").asString()).isEqualTo("due");
        assertThat(view.get("config").get("threads").asInt()).isEqualTo(3);
        assertThat(view.get("config").get("batchSize").asInt()).isEqualTo(7);
        assertThat(view.get("config").get("sourceKey").asString()).isEqualTo("delayqueue:" + business);
        JsonNode backlog = view.get("backlog");
        assertThat(backlog.get("due").asLong()).isEqualTo(3);
        assertThat(backlog.get("scheduled").asLong()).isEqualTo(2);
        assertThat(backlog.get("inflight").asLong()).isZero();
        assertThat(backlog.get("dead").asLong()).isZero();
        // overdue grows while the relay starts (slow on a busy machine): bounded by the time read after the view
        assertThat(backlog.get("oldestOverdueMs").asLong()).isBetween(3_000L, kit.redisNowMs() - (now - 3_000));

        assertThat(relay.get("/actuator/relay/" + business).json().get("name").asString())
                .isEqualTo(business);

        Answer peek = relay.get("/actuator/relay/" + business + "/peek?limit=2", TOKEN);
        assertThat(peek.status()).isEqualTo(200);
        assertThat(peek.json().get("count").asInt()).isEqualTo(2);
        assertThat(members(peek.json().get("entries"))).containsExactly("first", "second");
        assertThat(peek.json().get("entries").get(0).get("dueAtMs").asLong()).isEqualTo(now - 3_000);
        assertThat(peek.json().get("entries").get(0).get("shard").asInt())
                .isEqualTo(ShardSelector.shardOf("first", 16));
        assertThat(members(relay.get("/actuator/relay/" + business + "/peek", TOKEN)
                        .json()
                        .get("entries")))
                .containsExactly("first", "second", "third", "later-1", "later-2");

        Answer unknown = relay.get("/actuator/relay/no-such-business");
        assertThat(unknown.status()).isEqualTo(404);
        assertThat(unknown.json().get("error").asString()).isEqualTo("unknown business 'no-such-business'");
        assertThat(relay.get("/actuator/relay/no-such-business/peek", TOKEN).status())
                .isEqualTo(404);
        Answer badView = relay.get("/actuator/relay/" + business + "/nothing", TOKEN);
        assertThat(badView.status()).isEqualTo(404);
        assertThat(badView.json().get("error").asString()).contains("use peek or dead");
        Answer badLimit = relay.get("/actuator/relay/" + business + "/peek?limit=0", TOKEN);
        assertThat(badLimit.status()).isEqualTo(400);
        assertThat(badLimit.json().get("error").asString()).isEqualTo("limit must be between 1 and 1000, was 0");
    }

    @Test
    void pauseAndResumeNeedTheOperatorToken() throws Exception {
        String business = kit.business("opspause");
        String exchange = kit.exchange("opspause");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        RelayEngine engine = relay.context.getBean(RelayEngine.class);

        Answer anonymous = relay.post("/actuator/relay/" + business + "/pause", null, null);
        assertThat(anonymous.status()).isEqualTo(401);
        assertThat(anonymous.json().get("error").asString()).contains("X-Relay-Token");
        assertThat(relay.post("/actuator/relay/" + business + "/pause", "wrong", null)
                        .status())
                .isEqualTo(401);
        assertThat(relay.delete("/actuator/relay/" + business + "/dead", "wrong")
                        .status())
                .isEqualTo(401);
        assertThat(engine.relays().get(business).state().paused()).isFalse();

        Answer paused = relay.post("/actuator/relay/" + business + "/pause", TOKEN, null);
        assertThat(paused.status()).isEqualTo(200);
        assertThat(paused.json().get("paused").asBoolean()).isTrue();
        assertThat(engine.relays().get(business).state().paused()).isTrue();
        kit.producer().scheduleAfter(business, "held while paused", Duration.ZERO);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofMillis(700), Duration.ZERO))
                .isEmpty();
        assertThat(kit.scheduled(business)).isEqualTo(1);

        Answer resumed = relay.post("/actuator/relay/" + business + "/resume", TOKEN, null);
        assertThat(resumed.status()).isEqualTo(200);
        assertThat(resumed.json().get("paused").asBoolean()).isFalse();
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ofMillis(200)))
                .extracting(Received::text)
                .containsExactly("held while paused");

        Answer unknownAction = relay.post("/actuator/relay/" + business + "/explode", TOKEN, null);
        assertThat(unknownAction.status()).isEqualTo(404);
        assertThat(relay.post("/actuator/relay/nobody/pause", TOKEN, null).status())
                .isEqualTo(404);
    }

    @Test
    void writeOperationsAreDisabledWhenNoTokenIsConfigured() {
        String business = kit.business("opsoff");
        String exchange = kit.exchange("opsoff");
        Map<String, Object> properties = RelayTestKit.business(kit.baseProperties(), business, exchange, "due");
        WebRelay relay = start(properties, false);

        Answer refused = relay.post("/actuator/relay/" + business + "/pause", TOKEN, null);
        assertThat(refused.status()).isEqualTo(403);
        assertThat(refused.json().get("error").asString())
                .isEqualTo("relay write operations are disabled: set relay.ops.token or relay.ops.tokens.<name> to"
                        + " enable them");
        assertThat(relay.delete("/actuator/relay/" + business + "/dead?all=true", TOKEN)
                        .status())
                .isEqualTo(403);
        assertThat(relay.context
                        .getBean(RelayEngine.class)
                        .relays()
                        .get(business)
                        .state()
                        .paused())
                .isFalse();
        assertThat(relay.get("/actuator/relay").json().get("writeEnabled").asBoolean())
                .isFalse();
    }

    @Test
    void deadLettersAreListedReplayedAndPurged() throws Exception {
        String business = kit.business("opsdead");
        String exchange = kit.exchange("opsdead");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "later"));
        RedisDelayedMessageProducer producer = kit.producer();
        producer.scheduleAfter(business, "dead one", Duration.ZERO);
        producer.scheduleAfter(business, "dead two", Duration.ZERO);
        producer.scheduleByIdAfter(business, "id-3", "payload three".getBytes(StandardCharsets.UTF_8), Duration.ZERO);

        String deadPath = "/actuator/relay/" + business + "/dead";
        await().atMost(Duration.ofSeconds(10))
                .until(() -> relay.get(deadPath, TOKEN).json().get("count").asInt() == 3);
        JsonNode dead = relay.get(deadPath, TOKEN).json().get("deadLetters");
        assertThat(members(dead)).containsExactlyInAnyOrder("dead one", "dead two", "id-3");
        for (JsonNode letter : dead) {
            assertThat(letter.get("reason").asString()).startsWith("unroutable: 312 NO_ROUTE");
            assertThat(letter.get("deadAtMs").asLong()).isPositive();
        }
        assertThat(relay.get(deadPath + "?limit=1", TOKEN).json().get("count").asInt())
                .isEqualTo(1);

        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "later"));
        Answer one = relay.post("/actuator/relay/" + business + "/replay", TOKEN, "{\"member\":\"dead one\"}");
        assertThat(one.status()).isEqualTo(200);
        assertThat(one.json().get("replayed").asLong()).isEqualTo(1);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ofMillis(200)))
                .extracting(Received::text)
                .containsExactly("dead one");

        Answer purged = relay.delete(deadPath + "?member=id-3", TOKEN);
        assertThat(purged.status()).isEqualTo(200);
        assertThat(purged.json().get("purged").asLong()).isEqualTo(1);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        int shard = ShardSelector.shardOf("id-3", 16);
        try (RedisConnection c = kit.redis()) {
            byte[] id = "id-3".getBytes(StandardCharsets.UTF_8);
            assertThat(c.hashCommands().hExists(bytes(keys.payloads(shard)), id))
                    .isFalse();
            assertThat(c.hashCommands().hExists(bytes(keys.deadReasons(shard)), id))
                    .isFalse();
            assertThat(c.zSetCommands().zScore(bytes(keys.dead(shard)), id)).isNull();
        }

        Answer rest = relay.post("/actuator/relay/" + business + "/replay", TOKEN, "{\"all\":true}");
        assertThat(rest.status()).isEqualTo(200);
        assertThat(rest.json().get("replayed").asLong()).isEqualTo(1);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ofMillis(300)))
                .extracting(Received::text)
                .containsExactly("dead two");
        assertThat(relay.get(deadPath, TOKEN).json().get("count").asInt()).isZero();
        assertThat(kit.countAll(business, "dead")).isZero();
        assertThat(kit.countAll(business, "inflight")).isZero();
        assertThat(kit.scheduled(business)).isZero();
    }

    @Test
    void searchesCancelsDeliversNowAndShowsPayloadsOnlyToTheOperator(CapturedOutput output) throws Exception {
        String business = kit.business("opsentries");
        String exchange = kit.exchange("opsentries");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        for (int i = 1; i <= 4; i++) {
            producer.scheduleById(
                    business, "order-" + i, "{\"order\":" + i + "}", Instant.ofEpochMilli(now + i * 3_600_000L));
        }
        producer.schedule(business, "other-1", Instant.ofEpochMilli(now + 7_200_000L));
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        String base = "/actuator/relay/" + business;

        Answer anonymous = relay.get(base + "/peek?search=order-");
        assertThat(anonymous.status())
                .as("listings show bodies: operators only")
                .isEqualTo(401);
        assertThat(anonymous.text()).doesNotContain("order-1");
        Answer operator = relay.get(base + "/peek?search=order-&limit=2", TOKEN);
        assertThat(operator.json().get("bodies").asBoolean()).isTrue();
        assertThat(members(operator.json().get("entries"))).containsExactly("order-1", "order-2");
        assertThat(operator.json().get("entries").get(0).get("payload").asString())
                .isEqualTo("{\"order\":1}");
        assertThat(members(relay.get(base + "/peek?search=other", TOKEN).json().get("entries")))
                .containsExactly("other-1");
        assertThat(relay.get(base + "/peek?search=other", TOKEN)
                        .json()
                        .get("entries")
                        .get(0)
                        .get("payload")
                        .isNull())
                .as("the member is the message: no preview of its own")
                .isTrue();
        assertThat(relay.get(base + "/peek?search=o*", TOKEN)
                        .json()
                        .get("count")
                        .asInt())
                .as("glob characters match literally")
                .isZero();

        assertThat(relay.post(base + "/cancel", null, "{\"member\":\"order-3\"}")
                        .status())
                .isEqualTo(401);
        Answer cancelled = relay.post(base + "/cancel", TOKEN, "{\"members\":\"order-3\\norder-4\\nnobody\"}");
        assertThat(cancelled.status()).isEqualTo(200);
        assertThat(cancelled.json().get("cancelled").asLong()).isEqualTo(2);
        assertThat(members(relay.get(base + "/peek?search=order-", TOKEN).json().get("entries")))
                .containsExactly("order-1", "order-2");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        try (RedisConnection c = kit.redis()) {
            int shard = ShardSelector.shardOf("order-3", 16);
            assertThat(c.hashCommands().hExists(bytes(keys.payloads(shard)), bytes("order-3")))
                    .isFalse();
        }

        Answer now1 = relay.post(base + "/deliver-now", TOKEN, "{\"member\":\"order-2\"}");
        assertThat(now1.json().get("dueNow").asLong()).isEqualTo(1);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ofMillis(300)))
                .extracting(Received::text)
                .containsExactly("{\"order\":2}");
        assertThat(relay.post(base + "/deliver-now", TOKEN, "{}").status()).isEqualTo(400);
        assertThat(output.getOut())
                .contains("business=" + business + ": 2 scheduled entr(y/ies) cancelled (members ["
                        + AuditRef.describe("order-3") + ", " + AuditRef.describe("order-4") + ", "
                        + AuditRef.describe("nobody") + "]) by default from 127.0.0.1")
                .contains("business=" + business + ": 1 scheduled entr(y/ies) made due now (members ["
                        + AuditRef.describe("order-2") + "]) by default from 127.0.0.1");
    }

    @Test
    void replaysAndPurgesSelectedOrOldestDeadLettersAndFiltersThemByReason() throws Exception {
        String business = kit.business("opsselect");
        String exchange = kit.exchange("opsselect");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "later"));
        RedisDelayedMessageProducer producer = kit.producer();
        for (int i = 1; i <= 6; i++) {
            producer.scheduleByIdAfter(business, "dead-" + i, "body " + i, Duration.ZERO);
            int dead = i;
            // one at a time: the times of death give the order
            await().atMost(Duration.ofSeconds(10)).until(() -> kit.countAll(business, "dead") == dead);
        }
        String base = "/actuator/relay/" + business;
        JsonNode dead = relay.get(base + "/dead?reason=NO_ROUTE", TOKEN).json();
        assertThat(members(dead.get("deadLetters")))
                .containsExactly("dead-1", "dead-2", "dead-3", "dead-4", "dead-5", "dead-6");
        assertThat(dead.get("deadLetters").get(0).get("attempts").asInt()).isEqualTo(1);
        assertThat(dead.get("deadLetters").get(0).get("payload").asString()).isEqualTo("body 1");
        assertThat(relay.get(base + "/dead?reason=lease%20expired", TOKEN)
                        .json()
                        .get("count")
                        .asInt())
                .isZero();

        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "later"));
        Answer selected = relay.post(base + "/replay", TOKEN, "{\"members\":\"dead-5\\ndead-2\"}");
        assertThat(selected.json().get("replayed").asLong()).isEqualTo(2);
        assertThat(RelayTestKit.collect(received, 2, Duration.ofSeconds(5), Duration.ofMillis(300)))
                .extracting(Received::text)
                .containsExactlyInAnyOrder("body 5", "body 2");
        Answer oldest = relay.post(base + "/replay", TOKEN, "{\"limit\":2}");
        assertThat(oldest.json().get("replayed").asLong()).isEqualTo(2);
        assertThat(RelayTestKit.collect(received, 2, Duration.ofSeconds(5), Duration.ofMillis(300)))
                .extracting(Received::text)
                .containsExactlyInAnyOrder("body 1", "body 3");
        Answer purged = relay.post(base + "/purge", TOKEN, "{\"limit\":1}");
        assertThat(purged.json().get("purged").asLong()).isEqualTo(1);
        assertThat(members(relay.get(base + "/dead", TOKEN).json().get("deadLetters")))
                .containsExactly("dead-6");
        assertThat(relay.post(base + "/replay", TOKEN, "{\"limit\":0}").status())
                .isEqualTo(400);
    }

    @Test
    void healthShowsRedisAndRabbitAndReadinessFollowsTheEngineWhileLivenessStaysUp() {
        String business = kit.business("opshealth");
        String exchange = kit.exchange("opshealth");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        RelayEngine engine = relay.context.getBean(RelayEngine.class);

        Answer health = relay.get("/actuator/health");
        assertThat(health.status()).isEqualTo(200);
        assertThat(health.json().get("components").get("redis").get("status").asString())
                .isEqualTo("UP");
        assertThat(health.json().get("components").get("rabbit").get("status").asString())
                .isEqualTo("UP");
        await().atMost(Duration.ofSeconds(5))
                .until(() -> relay.get("/actuator/health/readiness").status() == 200);

        engine.stop();
        await().atMost(Duration.ofSeconds(5))
                .until(() -> relay.get("/actuator/health/readiness").status() == 503);
        assertThat(relay.get("/actuator/health/readiness").json().get("status").asString())
                .isEqualTo("OUT_OF_SERVICE");
        assertThat(relay.get("/actuator/health/liveness").status()).isEqualTo(200);
        assertThat(relay.get("/actuator/relay").json().get("running").asBoolean())
                .isFalse();

        engine.start();
        await().atMost(Duration.ofSeconds(5))
                .until(() -> relay.get("/actuator/health/readiness").status() == 200);
        assertThat(relay.get("/actuator/health/liveness").status()).isEqualTo(200);
    }

    @Test
    void exposesPrometheusButNotOtherEndpoints() {
        String business = kit.business("opsprom");
        String exchange = kit.exchange("opsprom");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));

        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(
                        relay.get("/actuator/prometheus").text())
                .contains("delay_relay_backlog_messages{business=\"" + business + "\",state=\"due\"} 0.0")
                .contains("delay_relay_shards{business=\"" + business + "\"} 16.0"));
        assertThat(relay.get("/actuator/info").status()).isEqualTo(200);
        assertThat(relay.get("/actuator/env").status()).isEqualTo(404);
        assertThat(relay.get("/actuator/beans").status()).isEqualTo(404);
    }

    private WebRelay start(Map<String, Object> properties) {
        return start(properties, true);
    }

    private WebRelay start(Map<String, Object> properties, boolean withToken) {
        if (withToken) {
            properties.put("relay.ops.token", TOKEN);
        }
        properties.put("relay.ops.readiness-check-interval", "100ms");
        properties.put("relay.metrics.sample-interval", "100ms");
        WebRelay relay = new WebRelay(properties);
        relays.add(relay);
        return relay;
    }

    private static List<String> members(JsonNode array) {
        List<String> members = new ArrayList<>();
        array.forEach(n -> members.add(n.get("member").asString()));
        return members;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
