package io.delayrelay.app;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.cloud.endpoint.event.RefreshEvent;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Hot reload the way Spring Cloud does it: the relay imports a config file, the file changes, a
 * {@link RefreshEvent} (what Nacos publishes on a change) makes Spring Cloud re-read it and announce the changed
 * keys, and the relay follows.
 */
class HotReloadTest {

    private final RelayTestKit kit = new RelayTestKit();

    @TempDir
    Path dir;

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    static final List<String> REJECTED = new CopyOnWriteArrayList<>();

    @Configuration(proxyBeanMethods = false)
    static class RecordingEvents {
        @Bean
        RelayEvents recordingRelayEvents() {
            return new RelayEvents() {
                @Override
                public void configRejected(String business, String problem) {
                    REJECTED.add(business + ": " + problem);
                }
            };
        }
    }

    private Path config(String yaml) throws IOException {
        Path file = dir.resolve("relay.yaml");
        Files.writeString(file, yaml, StandardCharsets.UTF_8);
        return file;
    }

    private ConfigurableApplicationContext start(Path file, Class<?>... sources) {
        Map<String, Object> props = kit.baseProperties();
        props.put("spring.config.import", "optional:file:" + file.toAbsolutePath());
        props.put("relay.reaper-interval", "200ms");
        props.put("relay.reshard-grace", "1s");
        return kit.startRelay(props, sources);
    }

    private static void refresh(ConfigurableApplicationContext context) {
        context.publishEvent(new RefreshEvent(context, null, "config changed"));
    }

    private static String business(String name, String exchange, String settings) {
        StringBuilder yaml = new StringBuilder(
                "relay:\n  businesses:\n    " + name + ":\n      exchange: " + exchange + "\n      routing-key: due\n");
        for (String line : settings.split(",")) {
            if (!line.isBlank()) {
                yaml.append("      ")
                        .append(line.trim().replaceFirst("=", ": "))
                        .append('\n');
            }
        }
        return yaml.toString();
    }

    @Test
    void reshardsFourToSixteenToTwoWhileProducingAndDeliversEveryMessageExactlyOnce() throws Exception {
        String name = kit.business("reshard");
        String exchange = kit.exchange("reshard");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Path file = config(business(name, exchange, "shards=4, threads=2, batch-size=50"));
        ConfigurableApplicationContext context = start(file);
        BusinessRelay relay = context.getBean(RelayEngine.class).relays().get(name);
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                kit.redisFactory(), 16, Duration.ofMillis(100), DelayQueueKeys::forBusiness);

        List<String> far = new ArrayList<>();
        List<String> near = new ArrayList<>();
        Map<String, Long> due = new HashMap<>();
        for (int i = 0; i < 20_000; i++) {
            if (i == 6_000) {
                Files.writeString(file, business(name, exchange, "shards=16, threads=2, batch-size=50"));
                refresh(context);
                assertThat(relay.spec().shards()).isEqualTo(16);
            }
            if (i == 13_000) {
                Files.writeString(file, business(name, exchange, "shards=2, threads=2, batch-size=50"));
                refresh(context);
                assertThat(relay.spec().shards()).isEqualTo(2);
                assertThat(relay.state().scanWidth())
                        .as("retired shards still scanned")
                        .isEqualTo(16);
            }
            String message = "m-" + i;
            if (i % 10 == 0) {
                producer.scheduleAfter(name, message, Duration.ofMinutes(5));
                far.add(message);
            } else {
                due.put(message, producer.scheduleAfter(name, message, Duration.ofMillis(i % 3000)));
                near.add(message);
            }
        }
        // the far entries are not due: any of them arriving now counts as unexpected
        Deliveries.expect(near).scheduledDue(due).check(received, Duration.ofSeconds(60));
        assertThat(relay.state().scanWidth())
                .as("far entries keep retired shards scanned")
                .isEqualTo(16);

        Instant now = Instant.ofEpochMilli(kit.redisNowMs());
        Map<String, Long> farDue = new HashMap<>();
        for (String message : far) {
            assertThat(producer.reschedule(name, message, now))
                    .as("found %s", message)
                    .isTrue();
            farDue.put(message, now.toEpochMilli());
        }
        // a late copy of a near message arriving now counts as unexpected here
        Deliveries.expect(far)
                .scheduledDue(farDue)
                .quiet(Duration.ofSeconds(1))
                .check(received, Duration.ofSeconds(30));

        await().atMost(Duration.ofSeconds(15)).until(() -> relay.state().scanWidth() == 2);
        assertThat(kit.scheduled(name)).isZero();
        assertThat(kit.countAll(name, "inflight")).isZero();
        try (RedisConnection c = kit.redis()) {
            Map<byte[], byte[]> meta = c.hashCommands()
                    .hGetAll(DelayQueueKeys.forBusiness(name).meta().getBytes(StandardCharsets.UTF_8));
            Map<String, String> fields = new HashMap<>();
            meta.forEach(
                    (k, v) -> fields.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
            assertThat(fields)
                    .containsEntry(MetaFields.SHARDS, "2")
                    .containsEntry(MetaFields.DRAINING, "")
                    .containsEntry(MetaFields.HISTORY, "16,4");
        }
    }

    @Test
    void threadsAndBatchSizeChangeLive() throws Exception {
        String name = kit.business("threads");
        String exchange = kit.exchange("threads");
        Path file = config(business(name, exchange, "threads=1, batch-size=10"));
        ConfigurableApplicationContext context = start(file);
        BusinessRelay relay = context.getBean(RelayEngine.class).relays().get(name);
        assertThat(relay.liveWorkers()).isEqualTo(1);

        Files.writeString(file, business(name, exchange, "threads=3, batch-size=250"));
        refresh(context);
        assertThat(relay.spec().batch().size()).isEqualTo(250);
        await().atMost(Duration.ofSeconds(5)).until(() -> relay.liveWorkers() == 3);
        assertThat(Thread.getAllStackTraces().keySet())
                .extracting(Thread::getName)
                .contains("relay-" + name + "-0", "relay-" + name + "-1", "relay-" + name + "-2");

        Files.writeString(file, business(name, exchange, "threads=1, batch-size=250"));
        refresh(context);
        await().atMost(Duration.ofSeconds(5)).until(() -> relay.liveWorkers() == 1);
    }

    @Test
    void pauseStopsDeliveriesWithinMaxIdleAndResumeCatchesUp() throws Exception {
        String name = kit.business("pause");
        String exchange = kit.exchange("pause");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Path file = config(business(name, exchange, "max-idle=100ms"));
        ConfigurableApplicationContext context = start(file);

        // traffic all along: a message due every 5 ms, from before the pause until after the resume
        List<String> sent = new CopyOnWriteArrayList<>();
        Map<String, Long> due = new ConcurrentHashMap<>();
        AtomicBoolean producing = new AtomicBoolean(true);
        Thread load = new Thread(() -> {
            for (int i = 0; producing.get(); i++) {
                String body = "during traffic " + i;
                due.put(body, kit.producer().scheduleAfter(name, body, Duration.ZERO));
                sent.add(body);
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        load.start();
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> received.size() >= 50);

            Files.writeString(file, business(name, exchange, "max-idle=100ms, paused=true"));
            refresh(context);
            long pausedAt = kit.redisNowMs();
            Thread.sleep(3_000); // messages keep falling due while paused
            int whilePaused = sent.size();
            List<Received> beforeResume = new ArrayList<>();
            received.drainTo(beforeResume);
            long lastRelayedAt = beforeResume.stream()
                    .mapToLong(r -> r.header(RelayHeaders.RELAYED_AT))
                    .max()
                    .orElseThrow();
            assertThat(lastRelayedAt)
                    .as("last pop (Redis time) after the pause took effect: within max-idle 100 ms + 1 s margin for a "
                            + "busy machine (unpaused, pops would go on for the 3 s watched)")
                    .isLessThanOrEqualTo(pausedAt + 100 + 1_000);
            assertThat(kit.scheduled(name))
                    .as("entries that fell due while paused wait in Redis")
                    .isGreaterThan(100);

            Files.writeString(file, business(name, exchange, "max-idle=100ms, paused=false"));
            refresh(context);
            Thread.sleep(300);
            producing.set(false);
            load.join(5_000);
            assertThat(sent.size()).isGreaterThan(whilePaused);
            List<Received> all = new ArrayList<>(beforeResume);
            Deliveries.Report rest = Deliveries.expect(sent)
                    .scheduledDue(due)
                    .await(new Deliveries.Inbox(received), Duration.ofSeconds(10));
            all.addAll(rest.all());
            Deliveries.expect(sent).scheduledDue(due).measure(all).assertClean();
        } finally {
            producing.set(false);
            load.join(5_000);
        }
    }

    @Test
    void invalidReloadedValuesAreRejectedAndThePreviousSettingsKept() throws Exception {
        REJECTED.clear();
        String name = kit.business("invalid");
        String exchange = kit.exchange("invalid");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Path file = config(business(name, exchange, "shards=4, threads=2"));
        ConfigurableApplicationContext context = start(file, RecordingEvents.class);
        BusinessRelay relay = context.getBean(RelayEngine.class).relays().get(name);

        Files.writeString(file, business(name, exchange, "shards=0, threads=-1, exchange-type=fanfare"));
        refresh(context);
        assertThat(relay.spec().shards()).isEqualTo(4);
        assertThat(relay.spec().threads()).isEqualTo(2);
        assertThat(REJECTED)
                .as("each bad value reported once, nothing else")
                .containsExactlyInAnyOrder(
                        name + ": relay.businesses." + name + ".shards=0: must be between 1 and 16384",
                        name + ": relay.businesses." + name + ".threads=-1: must be between 1 and 256",
                        name + ": relay.businesses." + name + ".exchange-type=fanfare: must be one of [direct, topic, "
                                + "fanout, headers]");
        kit.producer().scheduleAfter(name, "still relayed", Duration.ZERO);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ZERO))
                .extracting(Received::text)
                .containsExactly("still relayed");

        REJECTED.clear();
        Files.writeString(file, business(name, "no.such.exchange." + name, "shards=4, threads=2"));
        refresh(context);
        assertThat(REJECTED)
                .containsExactly(name + ": relay.businesses." + name + ".exchange=no.such.exchange." + name
                        + ": no such exchange on the broker (declare it, or set declare-exchange: true)");
        assertThat(relay.spec().route().exchange()).isEqualTo(exchange);
    }

    @Test
    void theLeadChangesLiveAndABadOneIsRejected() throws Exception {
        REJECTED.clear();
        String name = kit.business("leadreload");
        String exchange = kit.exchange("leadreload");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Path file = config(business(name, exchange, "shards=1, threads=1"));
        ConfigurableApplicationContext context = start(file, RecordingEvents.class);
        BusinessRelay relay = context.getBean(RelayEngine.class).relays().get(name);
        assertThat(relay.spec().popsAhead()).isFalse();

        Files.writeString(file, business(name, exchange, "shards=1, threads=1, lead=1s"));
        refresh(context);
        assertThat(relay.spec().timing().lead()).isEqualTo(Duration.ofSeconds(1));
        // the running worker pops ahead now: the pop of "first" leases "ahead" before its due time
        long now = kit.redisNowMs();
        long aheadDue = now + 2_300;
        kit.producer().schedule(name, "first".getBytes(StandardCharsets.UTF_8), Instant.ofEpochMilli(now + 1_500));
        kit.producer().schedule(name, "ahead".getBytes(StandardCharsets.UTF_8), Instant.ofEpochMilli(aheadDue));
        await().atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> kit.countAll(name, "inflight") > 0 && kit.scheduled(name) == 0);
        assertThat(kit.redisNowMs()).as("'ahead' leased before its due time").isLessThan(aheadDue);
        List<Received> both = RelayTestKit.collect(received, 2, Duration.ofSeconds(5), Duration.ZERO);
        assertThat(both).extracting(Received::text).containsExactly("first", "ahead");
        assertThat(both.get(1).header(RelayHeaders.RELAYED_AT)).isGreaterThanOrEqualTo(aheadDue);

        Files.writeString(file, business(name, exchange, "shards=1, threads=1, lead=5s"));
        refresh(context);
        assertThat(relay.spec().timing().lead()).as("the previous lead kept").isEqualTo(Duration.ofSeconds(1));
        assertThat(REJECTED)
                .containsExactly(name + ": relay.businesses." + name + ".lead=PT5S: must be between 0 and PT1S (0: off,"
                        + " each entry popped once it is due)");
    }

    @Test
    void addingABusinessStartsItAndRemovingOneStopsIt() throws Exception {
        String first = kit.business("first");
        String second = kit.business("second");
        String exchange = kit.exchange("addremove");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Path file = config(business(first, exchange, ""));
        ConfigurableApplicationContext context = start(file);
        RelayEngine engine = context.getBean(RelayEngine.class);

        Files.writeString(
                file,
                business(first, exchange, "") + business(second, exchange, "").replace("relay:\n  businesses:\n", ""));
        refresh(context);
        assertThat(engine.relays()).containsKeys(first, second);
        kit.producer().scheduleAfter(second, "to the new business", Duration.ZERO);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(5), Duration.ZERO))
                .extracting(Received::text)
                .containsExactly("to the new business");

        BusinessRelay removed = engine.relays().get(first);
        Files.writeString(file, business(second, exchange, ""));
        refresh(context);
        assertThat(engine.relays()).containsOnlyKeys(second);
        assertThat(removed.liveWorkers()).isZero();
        kit.producer().scheduleAfter(first, "nobody relays me", Duration.ZERO);
        assertThat(received.poll(500, TimeUnit.MILLISECONDS)).isNull();
        assertThat(kit.scheduled(first))
                .as("entries of a removed business stay in Redis")
                .isEqualTo(1);
    }
}
