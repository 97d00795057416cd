package io.delayrelay.app.schedule;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.stream.Collectors;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.config.ScheduleSettings;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.fleet.FleetPause;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.cloud.endpoint.event.RefreshEvent;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Recurring schedules against the real Redis and RabbitMQ, relays in-process: one message per slot across instances,
 * with its headers and stable id; a redefinition from the next slot; a reload; a paused business; bad settings
 * refused at start naming schedule, property and value. Catch-up after all instances stopped: RecurringScheduleIT.
 */
class RecurringScheduleTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    private Map<String, Object> relay(String business, String exchange, Object... schedules) {
        Map<String, Object> p = RelayTestKit.business(kit.baseProperties(), business, exchange, "rk", "shards", 2);
        for (int i = 0; i < schedules.length; i += 2) {
            p.put("relay.schedules." + schedules[i], schedules[i + 1]);
        }
        return p;
    }

    @Test
    void twoInstancesFireEachSlotOnceOnTimeWithTheScheduleHeadersAndAStableId() throws Exception {
        String business = kit.business("sched");
        String exchange = kit.exchange("sched");
        BlockingQueue<Received> got = kit.consume(kit.queue(exchange, "rk"));
        String name = business + "-tick";
        Map<String, Object> p = relay(
                business,
                exchange,
                name + ".business",
                business,
                name + ".every",
                "1s",
                name + ".payload",
                "{\"job\":\"reconcile\"}",
                name + ".headers.tenant",
                "acme");
        kit.startRelay(p);
        kit.startRelay(p);

        List<Received> all = RelayTestKit.collect(got, 6, Duration.ofSeconds(15), Duration.ofMillis(1500));
        List<Long> slots = all.stream().map(r -> r.header(RelayHeaders.SLOT)).toList();
        // one message per slot: consecutive seconds, none twice
        assertThat(slots).doesNotHaveDuplicates().isSorted();
        for (int i = 1; i < slots.size(); i++) {
            assertThat(slots.get(i) - slots.get(i - 1)).as("slots %s", slots).isEqualTo(1000);
        }
        for (Received r : all) {
            long slot = r.header(RelayHeaders.SLOT);
            assertThat(slot % 1000).isZero();
            assertThat(r.text()).isEqualTo("{\"job\":\"reconcile\"}");
            assertThat(r.headers()).containsEntry(RelayHeaders.SCHEDULE, name);
            assertThat(r.headers().get("tenant")).hasToString("acme");
            assertThat(r.header(RelayHeaders.DUE_AT)).isEqualTo(slot);
            assertThat(r.header(RelayHeaders.RELAYED_AT)).as("never early").isGreaterThanOrEqualTo(slot);
            assertThat(r.messageId()).isEqualTo(name + "@" + slot);
        }
        Map<String, String> state = stateOf(business, name);
        assertThat(Long.parseLong(state.get("written"))).isGreaterThanOrEqualTo(all.size());
        assertThat(state).doesNotContainKeys("skipped.catch-up", "skipped.paused");
    }

    @Test
    void aRuntimeScheduleRedefinedFiresTheNewPeriodFromItsNextSlotWithoutADoubleFire() throws Exception {
        String business = kit.business("redef");
        String exchange = kit.exchange("redef");
        BlockingQueue<Received> got = kit.consume(kit.queue(exchange, "rk"));
        ConfigurableApplicationContext ctx = kit.startRelay(relay(business, exchange));
        Schedules schedules = ctx.getBean(Schedules.class);
        String name = business + "-rt";
        ScheduleSettings every1 = settings(business, Duration.ofSeconds(1), "one");
        schedules.create(name, every1, "test");
        List<Received> first = RelayTestKit.collect(got, 3, Duration.ofSeconds(10), Duration.ZERO);
        assertThat(first).extracting(Received::text).containsOnly("one");
        schedules.create(name, settings(business, Duration.ofSeconds(2), "two"), "test");
        List<Received> second = RelayTestKit.collect(got, 8, Duration.ofSeconds(30), Duration.ofMillis(500));
        List<Received> all = new ArrayList<>(first);
        all.addAll(second);
        List<Long> slots = all.stream().map(r -> r.header(RelayHeaders.SLOT)).toList();
        assertThat(slots).doesNotHaveDuplicates().isSorted();
        // once the new definition fired, only even seconds follow, with the new payload
        int switched = all.stream().map(Received::text).toList().indexOf("two");
        assertThat(switched).isPositive();
        assertThat(all.subList(switched, all.size())).allSatisfy(r -> {
            assertThat(r.text()).isEqualTo("two");
            assertThat(r.header(RelayHeaders.SLOT) % 2000).isZero();
        });
        ScheduleView view = schedules.get(name);
        assertThat(view.origin()).isEqualTo("runtime");
        assertThat(view.definition()).isEqualTo("every 2s");
        assertThat(view.next()).hasSize(5);
        assertThat(view.next().get(1) - view.next().get(0)).isEqualTo(2000);
    }

    @Test
    void aReloadAddsChangesAndRejectsSchedulesWithoutARestart(@TempDir Path dir) throws Exception {
        String business = kit.business("reload");
        String exchange = kit.exchange("reload");
        BlockingQueue<Received> got = kit.consume(kit.queue(exchange, "rk"));
        Path file = dir.resolve("relay.yaml");
        String base = "relay:\n  businesses:\n    " + business + ":\n      exchange: " + exchange
                + "\n      routing-key: rk\n";
        Files.writeString(file, base);
        Map<String, Object> p = kit.baseProperties();
        p.put("spring.config.import", "optional:file:" + file.toAbsolutePath());
        ConfigurableApplicationContext ctx = kit.startRelay(p);
        String name = business + "-r";
        Files.writeString(
                file,
                base + "  schedules:\n    " + name + ":\n      business: " + business
                        + "\n      every: 1s\n      payload: first\n");
        ctx.publishEvent(new RefreshEvent(ctx, null, "config changed"));
        assertThat(RelayTestKit.collect(got, 2, Duration.ofSeconds(10), Duration.ZERO))
                .extracting(Received::text)
                .containsExactly("first", "first");
        // a bad value is rejected whole: the running schedule stays
        Files.writeString(
                file,
                base + "  schedules:\n    " + name + ":\n      business: " + business
                        + "\n      every: 1s\n      zone: Nowhere/Land\n      payload: bad\n");
        ctx.publishEvent(new RefreshEvent(ctx, null, "config changed"));
        assertThat(ctx.getBean(ScheduleTicker.class)
                        .configured()
                        .get(business)
                        .get(name)
                        .payload())
                .isEqualTo("first");
        // a changed payload and period apply from the next slot
        Files.writeString(
                file,
                base + "  schedules:\n    " + name + ":\n      business: " + business
                        + "\n      every: 2s\n      payload: second\n");
        ctx.publishEvent(new RefreshEvent(ctx, null, "config changed"));
        got.clear();
        List<Received> after = RelayTestKit.collect(got, 4, Duration.ofSeconds(15), Duration.ZERO);
        List<Received> changed = after.subList(after.size() - 2, after.size());
        assertThat(changed).extracting(Received::text).containsExactly("second", "second");
        assertThat(changed.get(1).header(RelayHeaders.SLOT) - changed.get(0).header(RelayHeaders.SLOT))
                .isEqualTo(2000);
    }

    @Test
    void aPausedBusinessHoldsItsSlotMessagesAndFiresEachOnResumeWhateverTheCatchUp() throws Exception {
        String business = kit.business("bizpause");
        String exchange = kit.exchange("bizpause");
        BlockingQueue<Received> got = kit.consume(kit.queue(exchange, "rk"));
        String name = business + "-s";
        // a period longer than the lead and the grace: the next slot is written while the last one still waits
        ConfigurableApplicationContext ctx = kit.startRelay(relay(
                business, exchange, name + ".business", business, name + ".every", "8s", name + ".catch-up", "none"));
        FleetPause pause = ctx.getBean(FleetPause.class);
        BusinessRelay relay = ctx.getBean(RelayEngine.class).relays().get(business);
        assertThat(RelayTestKit.collect(got, 1, Duration.ofSeconds(12), Duration.ZERO))
                .hasSize(1);
        pause.pause(relay, "test", null);
        long pausedAt = kit.redisNowMs();
        // one slot at least falls in the pause
        await().atMost(Duration.ofSeconds(20)).until(() -> kit.redisNowMs() > pausedAt + 9_000);
        pause.resume(relay, "test", null);
        List<Received> held = RelayTestKit.collect(got, 1, Duration.ofSeconds(10), Duration.ofSeconds(1));
        List<Long> slots = held.stream().map(r -> r.header(RelayHeaders.SLOT)).toList();
        // the slot that fell during the pause fires on resume: not missed, so not skipped
        assertThat(slots).as("slots %s", slots).isNotEmpty().allMatch(slot -> slot > pausedAt);
        assertThat(stateOf(business, name)).doesNotContainKey("skipped.catch-up");
    }

    @Test
    void badSchedulesAreRefusedAtStartNamingScheduleAndPropertyAndValue() {
        String business = kit.business("badsched");
        String exchange = kit.exchange("badsched");
        assertThatThrownBy(() -> kit.startRelay(relay(business, exchange, "s1.business", "nobody", "s1.every", "1s")))
                .hasStackTraceContaining("relay.schedules.s1.business=nobody: is not a business of this relay");
        assertThatThrownBy(() ->
                        kit.startRelay(relay(business, exchange, "s2.business", business, "s2.cron", "0 0 25 * * *")))
                .hasStackTraceContaining("relay.schedules.s2.cron=0 0 25 * * *: is not a cron expression");
        assertThatThrownBy(
                        () -> kit.startRelay(relay(business, exchange, "s3.business", business, "s3.every", "500ms")))
                .hasStackTraceContaining("relay.schedules.s3.every=PT0.5S: must be at least 1s");
        assertThatThrownBy(() -> kit.startRelay(
                        relay(business, exchange, "s4.business", business, "s4.every", "1s", "s4.cron", "0 * * * * *")))
                .hasStackTraceContaining("relay.schedules.s4.cron=0 * * * * *: give exactly one of cron and every");
        assertThatThrownBy(() -> kit.startRelay(relay(
                        business,
                        exchange,
                        "s5.business",
                        business,
                        "s5.cron",
                        "0 * * * * *",
                        "s5.zone",
                        "Mars/Olympus")))
                .hasStackTraceContaining("relay.schedules.s5.zone=Mars/Olympus: is not a time zone");
        assertThatThrownBy(() -> kit.startRelay(
                        relay(business, exchange, "s6.business", business, "s6.every", "1s", "s6.catch-up", "some")))
                .hasStackTraceContaining("relay.schedules.s6.catch-up=some: must be one of all, last, none");
    }

    private static ScheduleSettings settings(String business, Duration every, String payload) {
        ScheduleSettings s = new ScheduleSettings();
        s.setBusiness(business);
        s.setEvery(every);
        s.setPayload(payload);
        return s;
    }

    private Map<String, String> stateOf(String business, String name) {
        try (var c = kit.redis()) {
            String prefix = name + ":";
            return c
                    .hashCommands()
                    .hGetAll(DelayQueueKeys.bytes(
                            DelayQueueKeys.forBusiness(business).scheduleState()))
                    .entrySet()
                    .stream()
                    .filter(e -> new String(e.getKey()).startsWith(prefix))
                    .collect(Collectors.toMap(
                            e -> new String(e.getKey()).substring(prefix.length()), e -> new String(e.getValue())));
        }
    }
}
