package io.delayrelay.app.faults;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.faults.FaultFigures.Collector;
import io.delayrelay.app.faults.FaultFigures.Figures;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.util.FileSystemUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fault 3: the relay's Redis (a separate redis-server with AOF, appendfsync always, on port 6390) is killed with
 * SIGKILL and restarted while messages fall due. Every write Redis acknowledged survives; nothing of it is lost.
 */
@Tag("faults")
class RedisRestartTest {

    static final int PORT = 6390;
    static final long DOWN_MS = 3_000;

    private final RelayTestKit kit = new RelayTestKit();
    private Path dir;
    private LettuceConnectionFactory redis;

    @AfterEach
    void cleanUp() throws Exception {
        try {
            if (redis != null) {
                redis.destroy();
            }
            try {
                Shell.run(10, "redis-cli", "-p", Integer.toString(PORT), "shutdown", "nosave");
            } catch (IllegalStateException e) {
                // already down
            }
        } finally {
            kit.close();
            if (dir != null) {
                FileSystemUtils.deleteRecursively(dir);
            }
        }
    }

    @Test
    void relayReconnectsAfterARedisRestartAndLosesNothingRedisPersisted() throws Exception {
        dir = Files.createTempDirectory("delay-relay-redis-aof");
        startRedis();
        redis = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", PORT));
        redis.afterPropertiesSet();
        redis.start();

        String business = kit.business("redis-restart");
        String exchange = kit.exchange("redis-restart");
        Collector received = new Collector(kit.consume(kit.queue(exchange, "due")));
        Map<String, Object> props = new LinkedHashMap<>();
        props.put("spring.data.redis.host", "127.0.0.1");
        props.put("spring.data.redis.port", PORT);
        props.put("spring.rabbitmq.host", TestServices.rabbit().host());
        props.put("spring.rabbitmq.port", TestServices.rabbit().port());
        props.put("relay.reaper-interval", "500ms");
        RelayTestKit.business(props, business, exchange, "due", "threads", 2, "lease", "5s", "publish-timeout", "2s");

        List<String> sent = new CopyOnWriteArrayList<>();
        Map<String, Long> due = new ConcurrentHashMap<>();
        AtomicInteger rejected = new AtomicInteger();
        AtomicBoolean producing = new AtomicBoolean(true);
        RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(redis);
        Thread load = new Thread(
                () -> {
                    int i = 0;
                    long start = System.currentTimeMillis();
                    while (producing.get() && System.currentTimeMillis() - start < 30_000) {
                        String body = "rr-" + i++;
                        try {
                            due.put(body, producer.scheduleAfter(business, body, Duration.ofMillis(300)));
                            sent.add(body); // acknowledged by Redis: persisted (appendfsync always)
                        } catch (RuntimeException e) {
                            rejected.incrementAndGet(); // Redis was down: the producer saw the failure
                        }
                        try {
                            Thread.sleep(10);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "redis-restart-load");

        try (RelayProcess relay = RelayProcess.start("redis-restart", props)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> relay.started() || !relay.isAlive());
            load.start();
            Thread.sleep(8_000);
            int beforeKill = received.distinct();
            long pid = Long.parseLong(Files.readString(dir.resolve("redis.pid")).trim());
            Shell.run(10, "kill", "-9", Long.toString(pid));
            Thread.sleep(DOWN_MS);
            startRedis();
            long restarted = System.currentTimeMillis();
            int atRestart = received.distinct();
            await().atMost(Duration.ofSeconds(60)).until(() -> received.distinct() > atRestart);
            long reconnectMs = System.currentTimeMillis() - restarted;
            load.join();
            received.awaitDistinct(sent.size(), 60_000, 2_000);
            assertThat(relay.isAlive()).as("relay alive; see %s", relay.log()).isTrue();
            await().atMost(Duration.ofSeconds(20)).until(() -> inflight(business) == 0);
            Figures f = FaultFigures.of(
                    "3 Redis kill -9 + restart (AOF)",
                    sent,
                    due,
                    received.drain(),
                    String.format(
                            "deliveredBeforeKill=%d redisDownMs=%d writesRefusedWhileDown=%d firstDeliveryAfterRestartMs=%d",
                            beforeKill, DOWN_MS, rejected.get(), reconnectMs));
            assertThat(f.lost()).as("lost").isZero();
            assertThat(reconnectMs)
                    .as("relay delivers again after the restart within")
                    .isLessThan(15_000);
        } finally {
            producing.set(false);
            load.join(5_000);
        }
    }

    private void startRedis() {
        Shell.run(
                20,
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                Integer.toString(PORT),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--dir",
                dir.toString(),
                "--pidfile",
                dir.resolve("redis.pid").toString(),
                "--logfile",
                dir.resolve("redis.log").toString());
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> Shell.run(
                        5, "redis-cli", "-p", Integer.toString(PORT), "ping")
                .trim()
                .equals("PONG"));
    }

    private long inflight(String business) {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        long total = 0;
        try (RedisConnection c = redis.getConnection()) {
            for (int shard = 0; shard < 16; shard++) {
                Long n = c.zSetCommands().zCard(DelayQueueKeys.bytes(keys.inflight(shard)));
                total += n == null ? 0 : n;
            }
        }
        return total;
    }
}
