package io.delayrelay.app.schedule;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RecurringSchedule;
import io.delayrelay.api.RecurringScheduleClient;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Runtime schedules created from an application with relay-api's {@link RecurringScheduleClient}, carried out by a
 * relay running the business (real Redis and RabbitMQ).
 */
class RecurringScheduleClientTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aScheduleCreatedWithRelayApiFiresIsPausedResumedAndDeletedByTheRelay() throws Exception {
        String business = kit.business("client");
        String exchange = kit.exchange("client");
        BlockingQueue<Received> got = kit.consume(kit.queue(exchange, "rk"));
        String configured = business + "-cfg";
        Map<String, Object> p = RelayTestKit.business(kit.baseProperties(), business, exchange, "rk");
        p.put("relay.schedules." + configured + ".business", business);
        p.put("relay.schedules." + configured + ".cron", "0 0 0 1 1 *");
        ConfigurableApplicationContext ctx = kit.startRelay(p);
        RecurringScheduleClient client = new RecurringScheduleClient(kit.redisFactory());
        String name = business + "-api";

        client.put(
                business,
                name,
                RecurringSchedule.every(Duration.ofSeconds(1)).payload("ping").header("k", "v"),
                "billing");
        List<Received> first = RelayTestKit.collect(got, 2, Duration.ofSeconds(10), Duration.ZERO);
        assertThat(first).hasSize(2).allSatisfy(r -> {
            assertThat(r.text()).isEqualTo("ping");
            assertThat(r.headers().get("k")).hasToString("v");
            assertThat(r.headers().get(RelayHeaders.SCHEDULE)).hasToString(name);
        });
        Schedules schedules = ctx.getBean(Schedules.class);
        assertThat(schedules.get(name).origin()).isEqualTo("runtime");

        client.pause(business, name, "ops-anna");
        await().atMost(Duration.ofSeconds(5))
                .until(() -> "paused".equals(schedules.get(name).state()));
        assertThat(schedules.get(name).pausedBy()).isEqualTo("ops-anna");
        // the relay carries the pause out at its next tend (within about a second): it withdraws the slot entry
        // written ahead unless already popped, and writes no other. A slot due before that tend still fires (a CI run
        // saw one: the pause was asked a few ms before a slot). Carried out: no slot entry ahead any more
        await().atMost(Duration.ofSeconds(5)).until(() -> pendingSlot(business, name) <= kit.redisNowMs());
        long pausedAt = kit.redisNowMs();
        got.clear();
        // from then on a paused schedule fires nothing: over 3 s, at most a slot before the pause was carried out
        // that was still on its way
        assertThat(RelayTestKit.collect(got, 1, Duration.ofSeconds(3), Duration.ZERO))
                .allSatisfy(r -> assertThat(r.header(RelayHeaders.SLOT)).isLessThan(pausedAt));
        client.resume(business, name);
        List<Received> resumed = RelayTestKit.collect(got, 1, Duration.ofSeconds(5), Duration.ZERO);
        assertThat(resumed).hasSize(1);
        assertThat(resumed.get(0).header(RelayHeaders.SLOT)).isGreaterThan(pausedAt + 3_000);
        await().atMost(Duration.ofSeconds(5))
                .until(() -> schedules.get(name).skipped().getOrDefault("paused", 0L) >= 3);

        client.delete(business, name);
        await().atMost(Duration.ofSeconds(5)).until(() -> !exists(business, name));
        got.clear();
        assertThat(RelayTestKit.collect(got, 1, Duration.ofSeconds(3), Duration.ZERO))
                .isEmpty();

        // a configured schedule is not replaced or deleted from an application
        await().atMost(Duration.ofSeconds(5)).until(() -> exists(business, configured));
        assertThatThrownBy(() -> client.put(business, configured, RecurringSchedule.every(Duration.ofSeconds(5)), "x"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("declared in the relay's configuration");
        assertThatThrownBy(() -> client.delete(business, configured))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("remove it there");
        assertThatThrownBy(() -> client.pause(business, "nope", "x")).hasMessageContaining("no schedule nope");
    }

    @Test
    void badDefinitionsAreRefusedNamingTheValue() {
        assertThatThrownBy(() -> RecurringSchedule.cron("0 0 25 * * *")).hasMessageContaining("cron '0 0 25 * * *'");
        assertThatThrownBy(() -> RecurringSchedule.every(Duration.ofMillis(500)))
                .hasMessageContaining("every 'PT0.5S' must be at least 1s");
        assertThatThrownBy(() -> RecurringSchedule.every(Duration.ofSeconds(1)).zone("Mars/Olympus"))
                .hasMessageContaining("zone 'Mars/Olympus'");
        assertThatThrownBy(() -> RecurringSchedule.every(Duration.ofSeconds(1)).catchUp("some"))
                .hasMessageContaining("catch-up 'some'");
        assertThatThrownBy(() -> RecurringSchedule.every(Duration.ofSeconds(1)).header("x-delay-slot", "1"))
                .hasMessageContaining("header 'x-delay-slot' is refused");
        RecurringScheduleClient client = new RecurringScheduleClient(kit.redisFactory());
        assertThatThrownBy(() -> client.put("b", "Bad_Name", RecurringSchedule.every(Duration.ofSeconds(1)), "x"))
                .hasMessageContaining("schedule name 'Bad_Name'");
        RecurringSchedule r = RecurringSchedule.cron("0 0 9 * * MON-FRI")
                .zone("Asia/Shanghai")
                .payload("p")
                .header("h", "v");
        assertThat(RecurringSchedule.fromFields(r.fields()).fields()).isEqualTo(r.fields());
    }

    /** The slot of the schedule's last slot entry written ({@code <name>:pending}), or -1 when none is. */
    private long pendingSlot(String business, String name) {
        try (RedisConnection c = kit.redis()) {
            byte[] pending = c.hashCommands()
                    .hGet(
                            DelayQueueKeys.bytes(
                                    DelayQueueKeys.forBusiness(business).scheduleState()),
                            DelayQueueKeys.bytes(name + ":pending"));
            String id = pending == null ? "" : new String(pending, StandardCharsets.UTF_8);
            return id.isEmpty() ? -1 : ScheduleTender.slotOf(id);
        }
    }

    /** Whether any state field of the schedule is left in the business's schedule state hash. */
    private boolean exists(String business, String name) {
        try (RedisConnection c = kit.redis()) {
            var fields = c.hashCommands()
                    .hKeys(DelayQueueKeys.bytes(
                            DelayQueueKeys.forBusiness(business).scheduleState()));
            return fields != null
                    && fields.stream().anyMatch(f -> new String(f, StandardCharsets.UTF_8).startsWith(name + ":"));
        }
    }
}
