package io.delayrelay.app.ops;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.ops.RelayOpsTokenFilter.Operator;
import io.delayrelay.app.ops.WebRelay.Answer;
import io.delayrelay.app.schedule.Schedules;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Recurring schedules through the {@code relay} endpoint, against the real Redis and RabbitMQ: created at runtime,
 * listed with their next fire times, delivered with the schedule's headers, paused, resumed, triggered and deleted;
 * bad input gets a 400 naming schedule, property and value; writes need an operator token like every other write.
 */
@ExtendWith(OutputCaptureExtension.class)
class ScheduleOpsTest {

    private static final String TOKEN = "schedule-ops-token-1";
    private static final String BASE = "/actuator/relay/schedules";

    private final RelayTestKit kit = new RelayTestKit();
    private final List<WebRelay> relays = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        relays.forEach(WebRelay::close);
        kit.close();
    }

    @Test
    void aRuntimeScheduleIsCreatedListedDeliveredPausedResumedTriggeredAndDeleted(CapturedOutput output)
            throws Exception {
        String business = kit.business("opsched");
        String exchange = kit.exchange("opsched");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "tick"));
        String declared = business + "-declared";
        Map<String, Object> properties = RelayTestKit.business(kit.baseProperties(), business, exchange, "tick");
        // declared in configuration, paused: it never writes, it is there to be refused
        properties.put("relay.schedules." + declared + ".business", business);
        properties.put("relay.schedules." + declared + ".cron", "0 0 3 * * *");
        properties.put("relay.schedules." + declared + ".paused", true);
        WebRelay relay = start(properties, true);
        String name = business + "-every";
        String path = BASE + "/" + name;

        // create: every second, with a header of its own
        Answer created = relay.post(
                path + "/create",
                TOKEN,
                "{\"business\":\"" + business + "\",\"every\":\"1s\",\"payload\":\"tick\","
                        + "\"headers\":{\"tenant\":\"acme\"},\"catchUp\":\"none\"}");
        assertThat(created.status()).as(created.text()).isEqualTo(200);
        assertThat(created.json().get("name").asString()).isEqualTo(name);
        assertThat(created.json().get("origin").asString()).isEqualTo("runtime");
        assertThat(created.json().get("state").asString()).isEqualTo("active");
        assertThat(output.getOut()).contains("schedule " + name + ": created at runtime by default from 127.0.0.1");

        // listed (without a token: a view shows no payload) with its next 5 fire times, 1 s apart
        JsonNode listing = relay.get(BASE).json();
        JsonNode view = find(listing.get("schedules"), name);
        assertThat(view).as(listing.toString()).isNotNull();
        assertThat(view.get("business").asString()).isEqualTo(business);
        assertThat(view.get("definition").asString()).isNotBlank();
        assertThat(find(listing.get("schedules"), declared).get("state").asString())
                .isEqualTo("paused");
        List<Long> next = new ArrayList<>();
        view.get("next").forEach(n -> next.add(n.asLong()));
        assertThat(next).hasSize(5);
        for (int i = 1; i < 5; i++) {
            assertThat(next.get(i) - next.get(i - 1)).isEqualTo(1_000);
        }
        assertThat(relay.get(path).json().get("name").asString()).isEqualTo(name);

        // a message arrives on a queue bound to the business's exchange, stamped with schedule and slot
        List<Received> first = RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ZERO);
        assertThat(first).hasSize(1);
        Received tick = first.get(0);
        assertThat(tick.text()).isEqualTo("tick");
        assertThat(String.valueOf(tick.headers().get(RelayHeaders.SCHEDULE))).isEqualTo(name);
        long slot = tick.header(RelayHeaders.SLOT);
        assertThat(slot % 1_000).isZero();
        assertThat(tick.messageId()).isEqualTo(name + "@" + slot);
        assertThat(String.valueOf(tick.headers().get("tenant"))).isEqualTo("acme");
        await().atMost(Duration.ofSeconds(10))
                .until(() -> relay.get(path).json().get("written").asLong() >= 1);

        // pause: no new message while paused (after those already handed to the relay)
        Answer paused = relay.post(path + "/pause", TOKEN, null);
        assertThat(paused.status()).as(paused.text()).isEqualTo(200);
        assertThat(paused.json().get("state").asString()).isEqualTo("paused");
        assertThat(paused.json().get("pausedBy").asString()).isEqualTo("default from 127.0.0.1");
        assertThat(paused.json().get("next").size()).isZero();
        // a slot written before the pause may still be delivered: wait until a second passes without one
        await().atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> RelayTestKit.collect(received, 1, Duration.ofMillis(1_200), Duration.ZERO)
                        .isEmpty());
        long writtenWhilePaused = relay.get(path).json().get("written").asLong();
        // the bounded observation window: 3 slots pass, none is delivered nor written
        assertThat(RelayTestKit.collect(received, 1, Duration.ofMillis(3_000), Duration.ZERO))
                .isEmpty();
        assertThat(relay.get(path).json().get("written").asLong()).isEqualTo(writtenWhilePaused);

        // resume: messages again; the slots passed meanwhile are counted as skipped, reason paused
        Answer resumed = relay.post(path + "/resume", TOKEN, null);
        assertThat(resumed.status()).as(resumed.text()).isEqualTo(200);
        assertThat(resumed.json().get("state").asString()).isEqualTo("active");
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ZERO))
                .hasSize(1);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            JsonNode skipped = relay.get(path).json().get("skipped");
            assertThat(skipped.has("paused")).as(skipped.toString()).isTrue();
            // at least 4 slots passed while paused; those within SlotPlanner.GRACE_MS before the resume are
            // written, not skipped (see resumeDeliversNoSlotThatPassedWhilePaused)
            assertThat(skipped.get("paused").asLong()).isPositive();
        });
        JsonNode afterResume = relay.get(path).json();
        assertThat(afterResume.get("lastSlot").isNull())
                .as(afterResume.toString())
                .isFalse();
        assertThat(afterResume.get("lastDelivery").isNull())
                .as(afterResume.toString())
                .isFalse();

        // trigger now: one extra message with its own id
        Answer triggered = relay.post(path + "/trigger", TOKEN, null);
        assertThat(triggered.status()).as(triggered.text()).isEqualTo(200);
        String id = triggered.json().get("messageId").asString();
        assertThat(id).startsWith(name + "@manual-");
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            Received r = received.poll(100, java.util.concurrent.TimeUnit.MILLISECONDS);
            return r != null && id.equals(r.messageId());
        });
        assertThat(output.getOut()).contains("schedule " + name + ": triggered now by default from 127.0.0.1");

        // a schedule declared in configuration cannot be replaced nor deleted here: 409
        Answer replace = relay.post(
                BASE + "/" + declared + "/create", TOKEN, "{\"business\":\"" + business + "\",\"every\":\"1m\"}");
        assertThat(replace.status()).as(replace.text()).isEqualTo(409);
        assertThat(replace.json().get("error").asString()).contains("declared in configuration");
        assertThat(relay.delete(BASE + "/" + declared, TOKEN).status()).isEqualTo(409);

        // delete: gone from the list, no more messages
        Answer deleted = relay.delete(path, TOKEN);
        assertThat(deleted.status()).as(deleted.text()).isEqualTo(200);
        assertThat(deleted.json().get("deleted").asBoolean()).isTrue();
        assertThat(find(relay.get(BASE).json().get("schedules"), name)).isNull();
        Answer gone = relay.get(path);
        assertThat(gone.status()).isEqualTo(404);
        assertThat(gone.json().get("error").asString()).isEqualTo("no schedule named '" + name + "'");
        assertThat(relay.post(path + "/pause", TOKEN, null).status()).isEqualTo(404);
        assertThat(relay.delete(path, TOKEN).status()).isEqualTo(404);
        assertThat(output.getOut()).contains("schedule " + name + ": deleted by default from 127.0.0.1");
    }

    /**
     * Schedules.resume says "the slots passed meanwhile stay skipped", SlotPlanner "while paused, the slots passed
     * are skipped with reason paused, also those passed before the resume". Found failing: SlotPlanner.plan, on
     * the first tend after a resume (held), skips with reason paused only the slots older than now - GRACE_MS (2 s);
     * the slots passed while paused in the last 2 s before the resume are written and delivered at once.
     */
    @Test
    void resumeDeliversNoSlotThatPassedWhilePaused() throws Exception {
        String business = kit.business("opsresume");
        String exchange = kit.exchange("opsresume");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "tick"));
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "tick"), true);
        String path = BASE + "/" + business + "-every";
        assertThat(relay.post(path + "/create", TOKEN, "{\"business\":\"" + business + "\",\"every\":\"1s\"}")
                        .status())
                .isEqualTo(200);
        assertThat(relay.post(path + "/pause", TOKEN, null).status()).isEqualTo(200);
        long pausedAt = kit.redisNowMs();
        await().atMost(Duration.ofSeconds(10)).until(() -> kit.redisNowMs() > pausedAt + 4_000);
        long resumedAt = kit.redisNowMs();
        assertThat(relay.post(path + "/resume", TOKEN, null).status()).isEqualTo(200);
        List<Received> after = RelayTestKit.collect(received, 100, Duration.ofSeconds(3), Duration.ZERO);
        assertThat(after)
                .extracting(r -> r.header(RelayHeaders.SLOT))
                .as("slots delivered after the resume at %d (paused at %d)", resumedAt, pausedAt)
                .noneMatch(slot -> slot > pausedAt + 1_000 && slot < resumedAt);
    }

    @Test
    void badInputGetsA400NamingSchedulePropertyAndValue() {
        String business = kit.business("opsbad");
        String exchange = kit.exchange("opsbad");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "tick"), true);
        String path = BASE + "/" + business + "-nightly/create";

        Answer badCron = relay.post(path, TOKEN, "{\"business\":\"" + business + "\",\"cron\":\"0 61 * * *\"}");
        assertThat(badCron.status()).isEqualTo(400);
        assertThat(badCron.json().get("error").asString())
                .startsWith("schedule " + business + "-nightly.cron=0 61 * * *: is not a cron expression");

        Answer badEvery = relay.post(path, TOKEN, "{\"business\":\"" + business + "\",\"every\":\"often\"}");
        assertThat(badEvery.status()).isEqualTo(400);
        assertThat(badEvery.json().get("error").asString())
                .startsWith("schedule " + business + "-nightly.every=often: is not a duration");

        Answer tooOften = relay.post(path, TOKEN, "{\"business\":\"" + business + "\",\"every\":\"100ms\"}");
        assertThat(tooOften.status()).isEqualTo(400);
        assertThat(tooOften.json().get("error").asString())
                .isEqualTo("schedule " + business + "-nightly.every=PT0.1S: must be at least 1s");

        Answer badBusiness = relay.post(path, TOKEN, "{\"business\":\"nobody\",\"every\":\"1m\"}");
        assertThat(badBusiness.status()).isEqualTo(400);
        assertThat(badBusiness.json().get("error").asString())
                .startsWith("schedule " + business + "-nightly.business=nobody: is not a business of this relay");

        Answer badZone = relay.post(
                path, TOKEN, "{\"business\":\"" + business + "\",\"cron\":\"0 0 3 * * *\",\"zone\":\"Mars/Base\"}");
        assertThat(badZone.status()).isEqualTo(400);
        assertThat(badZone.json().get("error").asString())
                .startsWith("schedule " + business + "-nightly.zone=Mars/Base: is not a time zone");

        Answer relayHeader = relay.post(
                path,
                TOKEN,
                "{\"business\":\"" + business + "\",\"every\":\"1m\",\"headers\":{\"x-delay-slot\":\"1\"}}");
        assertThat(relayHeader.status()).isEqualTo(400);
        assertThat(relayHeader.json().get("error").asString())
                .startsWith("schedule " + business + "-nightly.headers.x-delay-slot=1: is refused");

        Answer badPaused =
                relay.post(path, TOKEN, "{\"business\":\"" + business + "\",\"every\":\"1m\",\"paused\":\"maybe\"}");
        assertThat(badPaused.status()).isEqualTo(400);
        assertThat(badPaused.json().get("error").asString())
                .isEqualTo("schedule " + business + "-nightly.paused=maybe: is true or false");

        Answer unknownField =
                relay.post(path, TOKEN, "{\"business\":\"" + business + "\",\"every\":\"1m\",\"catch-up\":\"all\"}");
        assertThat(unknownField.status()).isEqualTo(400);
        assertThat(unknownField.json().get("error").asString())
                .isEqualTo("unknown field 'catch-up': a schedule's create takes business, cron, every, zone,"
                        + " payload, headers, catchUp, paused");

        Answer nested = relay.post(path, TOKEN, "{\"business\":\"" + business + "\",\"cron\":{\"at\":3}}");
        assertThat(nested.status()).isEqualTo(400);
        assertThat(nested.json().get("error").asString()).isEqualTo("\"cron\" is a text, was {\"at\":3}");

        Answer badHeaders = relay.post(
                path, TOKEN, "{\"business\":\"" + business + "\",\"every\":\"1m\",\"headers\":{\"tags\":[1,2]}}");
        assertThat(badHeaders.status()).isEqualTo(400);
        assertThat(badHeaders.json().get("error").asString())
                .isEqualTo("schedule " + business + "-nightly.headers.tags=[1, 2]: is a text, a number or a boolean");

        Answer badName =
                relay.post(BASE + "/Nightly/create", TOKEN, "{\"business\":\"" + business + "\",\"every\":\"1m\"}");
        assertThat(badName.status()).isEqualTo(400);
        assertThat(badName.json().get("error").asString()).contains("schedule name 'Nightly'");

        Answer fieldOnPause = relay.post(BASE + "/" + business + "-nightly/pause", TOKEN, "{\"by\":\"x\"}");
        assertThat(fieldOnPause.status()).isEqualTo(400);
        assertThat(fieldOnPause.json().get("error").asString())
                .isEqualTo("unknown field 'by': a schedule's pause takes no field");

        Answer unknownAction = relay.post(BASE + "/" + business + "-nightly/explode", TOKEN, null);
        assertThat(unknownAction.status()).isEqualTo(404);
        assertThat(unknownAction.json().get("error").asString()).contains("use create, pause, resume or trigger");

        assertThat(relay.get(BASE).json().get("count").asInt()).isZero();
    }

    @Test
    void writesNeedAnOperatorTokenAsEveryOtherWrite() {
        String business = kit.business("opsauth");
        String exchange = kit.exchange("opsauth");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "tick"), true);
        String path = BASE + "/" + business + "-auth";
        String body = "{\"business\":\"" + business + "\",\"every\":\"1h\"}";

        Answer anonymous = relay.post(path + "/create", null, body);
        assertThat(anonymous.status()).isEqualTo(401);
        assertThat(anonymous.json().get("error").asString()).contains("X-Relay-Token");
        assertThat(relay.post(path + "/create", "wrong-token-wrong-token", body).status())
                .isEqualTo(401);
        assertThat(relay.get(BASE).json().get("count").asInt()).isZero();

        assertThat(relay.post(path + "/create", TOKEN, body).status()).isEqualTo(200);
        for (String action : List.of("pause", "resume", "trigger")) {
            assertThat(relay.post(path + "/" + action, null, null).status())
                    .as(action)
                    .isEqualTo(401);
        }
        assertThat(relay.delete(path, null).status()).isEqualTo(401);
        assertThat(relay.get(path).json().get("state").asString()).isEqualTo("active");
        assertThat(relay.delete(path, TOKEN).status()).isEqualTo(200);

        // JSON booleans and numbers are taken as their text; "paused": true creates it paused by the operator
        Answer paused = relay.post(
                path + "/create", TOKEN, "{\"business\":\"" + business + "\",\"every\":60000,\"paused\":true}");
        assertThat(paused.status()).as(paused.text()).isEqualTo(200);
        assertThat(paused.json().get("state").asString()).isEqualTo("paused");
        assertThat(relay.post(path + "/resume", TOKEN, null).json().get("state").asString())
                .isEqualTo("active");
        Answer active = relay.post(
                path + "/create", TOKEN, "{\"business\":\"" + business + "\",\"every\":60000,\"paused\":false}");
        assertThat(active.status()).as(active.text()).isEqualTo(200);
        assertThat(active.json().get("state").asString()).isEqualTo("active");
        assertThat(active.json().get("definition").asString()).isEqualTo("every 1m");
    }

    @Test
    void writesAreDisabledWhenNoTokenIsConfigured() {
        String business = kit.business("opsnotoken");
        String exchange = kit.exchange("opsnotoken");
        WebRelay relay = start(RelayTestKit.business(kit.baseProperties(), business, exchange, "tick"), false);

        Answer refused = relay.post(
                BASE + "/" + business + "-off/create", TOKEN, "{\"business\":\"" + business + "\",\"every\":\"1h\"}");
        assertThat(refused.status()).isEqualTo(403);
        assertThat(refused.json().get("error").asString()).startsWith("relay write operations are disabled");
        assertThat(relay.delete(BASE + "/" + business + "-off", TOKEN).status()).isEqualTo(403);
        assertThat(relay.get(BASE).status()).isEqualTo(200);
        assertThat(relay.get(BASE).json().get("count").asInt()).isZero();
    }

    @Test
    void withoutTheSchedulesBeanEveryScheduleRequestIs404() {
        ScheduleOps ops = new ScheduleOps(new DefaultListableBeanFactory().getBeanProvider(Schedules.class));
        Operator alice = new Operator("alice", "127.0.0.1");
        for (var answer : List.of(
                ops.list(),
                ops.get("nightly"),
                ops.write("nightly", "pause", alice, ScheduleOps.body(new String[8])),
                ops.delete("nightly", alice))) {
            assertThat(answer.getStatus()).isEqualTo(404);
            assertThat(((OpsViews.Failure) answer.getBody()).error())
                    .isEqualTo("recurring schedules are not available on this relay");
        }
    }

    private static JsonNode find(JsonNode schedules, String name) {
        for (JsonNode s : schedules) {
            if (s.get("name").asString().equals(name)) {
                return s;
            }
        }
        return null;
    }

    private WebRelay start(Map<String, Object> properties, boolean withToken) {
        if (withToken) {
            properties.put("relay.ops.token", TOKEN);
        }
        properties.put("relay.ops.readiness-check-interval", "100ms");
        WebRelay relay = new WebRelay(properties);
        relays.add(relay);
        return relay;
    }
}
