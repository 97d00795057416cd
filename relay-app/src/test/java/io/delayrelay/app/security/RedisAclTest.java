package io.delayrelay.app.security;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.DelayRelayApplication;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.faults.Shell;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.ops.RelayOpsProperties;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestRelayApplication;
import io.delayrelay.app.support.TestServices;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.data.redis.health.DataRedisHealthIndicator;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay and a producer as least-privileged Redis ACL users, on a redis-server of the test's own whose default
 * user needs a password. Every command either of them sends (scripts included) must be allowed by the documented
 * rules: Redis' ACL LOG stays empty, and the users cannot touch anything else. That includes what an operator does
 * through the ops endpoint (pause, resume, search, deliver-now, cancel, replay, purge) and what a second replica
 * does (it reads the backlog another replica sampled): issue 24 (O1) found the documented rules refused HMSET,
 * PUBLISH, GET and ZSCAN there.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisAclTest {

    static final String ADMIN_PASSWORD = "admin-Secret-4711";
    static final String RELAY_PASSWORD = "relay-Secret-0815";
    static final String PRODUCER_PASSWORD = "producer-Secret-1337";
    static final String OPS_TOKEN = "acl-test-operator-token-0123456789abcdef";

    /**
     * The relay's rules (docs/operations.md "Redis: password, ACL user, TLS"): default source keys delayqueue:*. The
     * ops endpoint and the console need +hmset (pause), +publish (pause/resume notices, replay's and deliver-now's
     * wake-ups), +zscan (search); a replica that did not sample the backlog reads it with +get; ack.lua calls EXISTS;
     * the cold tier's cold-promote.lua calls HEXISTS and cold-count.lua (the mover's gauge, the backlog) HLEN.
     */
    static final String RELAY_RULES = "on resetkeys resetchannels ~delayqueue:* ~{delayqueue:* &delayqueue:*:wake"
            + " -@all +hello +ping +info +evalsha +eval +time +type +exists +subscribe +unsubscribe +publish +incr +incrby"
            + " +set +get +hget +hset +hmset +hmget +hdel +hgetall +hexists +hlen +zadd +zrem +zcard +zcount +zscore +zmscore"
            + " +zrange"
            + " +zrangebyscore +zscan";
    /** A producer's rules: schedule, cancel, reschedule, count (HLEN: the cold tier's live count), peek. */
    static final String PRODUCER_RULES = "on resetkeys resetchannels ~delayqueue:* ~{delayqueue:* &delayqueue:*:wake"
            + " -@all +hello +ping +evalsha +eval +time +publish +hset +hdel +hmget +hlen +zadd +zrem +zscore +zcard"
            + " +zrange";

    private static PrivateRedis redis;

    @BeforeAll
    static void startRedisWithAcls() {
        redis = PrivateRedis.builder()
                .args("--requirepass", ADMIN_PASSWORD)
                .cliArgs("-a", ADMIN_PASSWORD, "--no-auth-warning")
                .start();
        acl("delay-relay", RELAY_PASSWORD, RELAY_RULES);
        acl("delay-producer", PRODUCER_PASSWORD, PRODUCER_RULES);
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    /** Each test reads the ACL LOG of its own commands only. */
    @BeforeEach
    void resetAclLog() {
        admin("acl", "log", "reset");
    }

    @Test
    void relayAndProducerWorkWithTheirMinimalAclsAndNeverLogTheirPasswords(CapturedOutput output) throws Exception {
        try (RelayTestKit kit = new RelayTestKit()) {
            String business = kit.business("acl");
            String dead = kit.business("acl-dead");
            String exchange = kit.exchange("acl");
            BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
            Map<String, Object> props = kit.baseProperties();
            props.put("spring.data.redis.port", redis.port());
            props.put("spring.data.redis.username", "delay-relay");
            props.put("spring.data.redis.password", RELAY_PASSWORD);
            // Keyspace notifications need CONFIG GET and PSUBSCRIBE, which these minimal rules leave out
            // (docs/operations.md).
            props.put("relay.wake.keyspace-events", "off");
            RelayTestKit.business(props, business, exchange, "due", "threads", 2);
            RelayTestKit.business(props, dead, exchange, "nobody-listens", "threads", 1);
            ConfigurableApplicationContext relay = kit.startRelay(props);

            LettuceConnectionFactory producerRedis = factory("delay-producer", PRODUCER_PASSWORD);
            try {
                RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(producerRedis);
                long now = serverNow(producerRedis);
                producer.schedule(business, "plain", Instant.ofEpochMilli(now + 2_000));
                producer.scheduleById(business, "order-1", "{\"order\":1}", Instant.ofEpochMilli(now + 2_000));
                producer.scheduleById(business, "order-2", "{\"order\":2}", Instant.ofEpochMilli(now + 2_000));
                producer.scheduleByIdAfter(business, "order-3", "{\"order\":3}", Duration.ofMillis(1_500));
                assertThat(producer.cancelById(business, "order-2")).isTrue();
                assertThat(producer.rescheduleById(business, "order-3", Instant.ofEpochMilli(now + 2_300)))
                        .isTrue();
                assertThat(producer.count(business)).isEqualTo(3);
                assertThat(producer.peek(business, 10)).hasSize(3);
                producer.scheduleAfter(dead, "nobody wants me", Duration.ZERO);

                // order-2 was cancelled: its arrival would count as unexpected
                Deliveries.expect("plain", "{\"order\":1}", "{\"order\":3}").check(received, Duration.ofSeconds(10));
                DelayQueueKeys deadKeys = DelayQueueKeys.forBusiness(dead);
                int shard = ShardSelector.shardOf("nobody wants me", 16);
                await().atMost(Duration.ofSeconds(10)).until(() -> zcard(producerRedis, deadKeys.dead(shard)) == 1);
                // a few reaper and topology rounds as the ACL user: the server has run many more scripts
                long scripts = evalshaCalls();
                await().atMost(Duration.ofSeconds(15)).until(() -> evalshaCalls() >= scripts + 20);
                // the actuator's Redis health check (INFO) as the relay's ACL user
                assertThat(new DataRedisHealthIndicator(relay.getBean(RedisConnectionFactory.class))
                                .health()
                                .getStatus()
                                .getCode())
                        .isEqualTo("UP");
            } finally {
                producerRedis.destroy();
            }
            String denied = admin("acl", "log");
            assertThat(denied).as("ACL LOG: commands the rules refused").isBlank();
        }
        assertThat(output.getAll())
                .as("passwords never logged")
                .doesNotContain(RELAY_PASSWORD)
                .doesNotContain(PRODUCER_PASSWORD);
    }

    /**
     * A business with {@code cold-after} under the same rules: the cold tier's scripts (demote, promote with HEXISTS,
     * the live count with HLEN, read by the mover and by the backlog the ops endpoint shows) are allowed.
     */
    @Test
    void aColdBusinessDemotesPromotesAndCountsUnderTheRelaysMinimalAcl() throws Exception {
        try (RelayTestKit kit = new RelayTestKit()) {
            String business = kit.business("acl-cold");
            String exchange = kit.exchange("acl-cold");
            BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
            Map<String, Object> props = kit.baseProperties();
            props.put("spring.data.redis.port", redis.port());
            props.put("spring.data.redis.username", "delay-relay");
            props.put("spring.data.redis.password", RELAY_PASSWORD);
            props.put("relay.wake.keyspace-events", "off");
            props.put("relay.metrics.sample-interval", "200ms");
            RelayTestKit.business(props, business, exchange, "due", "shards", 1, "cold-after", "10s");
            kit.startRelay(props);

            LettuceConnectionFactory producerRedis = factory("delay-producer", PRODUCER_PASSWORD);
            try {
                RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(producerRedis);
                long now = serverNow(producerRedis);
                List<String> bodies = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    String body = "{\"cold\":" + i + "}";
                    producer.scheduleById(business, "cold-" + i, body, Instant.ofEpochMilli(now + 20_000 + i));
                    bodies.add(body);
                }
                // members over 32 bytes: indexed by digest, their cancel and reschedule are requests
                // (docs/cold-tier.md)
                List<String> longer = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    String body = "{\"cold\":" + i + ",\"plain\":\"a message over thirty-two bytes\"}";
                    producer.schedule(business, body, Instant.ofEpochMilli(now + 20_000 + i));
                    longer.add(body);
                }
                // due 20 s ahead: demoted (cold-after 10 s) by a pass within 10 s of the writes
                DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
                await().atMost(Duration.ofSeconds(15)).until(() -> zcard(producerRedis, keys.shard(0)) == 0);
                byte[] cancelled = longer.get(0).getBytes(StandardCharsets.UTF_8);
                assertThat(producer.cancel(business, cancelled)).isTrue();
                assertThat(producer.reschedule(
                                business,
                                longer.get(1).getBytes(StandardCharsets.UTF_8),
                                Instant.ofEpochMilli(now + 21_000)))
                        .isTrue();
                bodies.addAll(longer.subList(1, 4));
                // one block, or more when a mover pass came between two of the writes (seen on a busy box)
                assertThat(Integer.parseInt(admin("zcard", keys.cold(0)).trim()))
                        .as("demoted into blocks")
                        .isGreaterThanOrEqualTo(1);
                assertThat(producer.count(business)).as("hot + cold").isEqualTo(23);
                Deliveries.expect(bodies).check(received, Duration.ofSeconds(30));
                assertThat(admin("zcard", keys.cold(0)).trim()).as("promoted").isEqualTo("0");
            } finally {
                producerRedis.destroy();
            }
            String denied = admin("acl", "log");
            assertThat(denied).as("ACL LOG: commands the rules refused").isBlank();
        }
    }

    @Test
    void theRelayUserCannotTouchOtherKeysOrAdministerTheServer() {
        try {
            assertThat(as("delay-relay", RELAY_PASSWORD, "get", "sessions:42")).contains("NOPERM");
            assertThat(as("delay-relay", RELAY_PASSWORD, "flushall")).contains("NOPERM");
            assertThat(as("delay-producer", PRODUCER_PASSWORD, "publish", "other-channel", "hi"))
                    .contains("NOPERM");
        } finally {
            admin("acl", "log", "reset"); // these refusals must not show in another test's ACL LOG check
        }
    }

    /** redis-cli as an ACL user. */
    private static String as(String user, String password, String... args) {
        List<String> command = new ArrayList<>(List.of(
                "redis-cli",
                "-p",
                Integer.toString(redis.port()),
                "--user",
                user,
                "--pass",
                password,
                "--no-auth-warning"));
        command.addAll(List.of(args));
        return Shell.run(10, command.toArray(String[]::new));
    }

    private static long evalshaCalls() {
        String stats = admin("info", "commandstats");
        for (String line : stats.split("\r?\n")) {
            if (line.startsWith("cmdstat_evalsha:calls=")) {
                return Long.parseLong(line.substring("cmdstat_evalsha:calls=".length(), line.indexOf(',')));
            }
        }
        return 0;
    }

    @Test
    void theOpsEndpointAndASecondReplicaWorkUnderTheRelaysRules() throws Exception {
        admin("config", "resetstat");
        try (RelayTestKit kit = new RelayTestKit()) {
            String business = kit.business("aclops");
            String dead = kit.business("aclops-dead");
            String exchange = kit.exchange("aclops");
            BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
            Map<String, Object> props = new LinkedHashMap<>();
            props.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
            props.put("spring.main.banner-mode", "off");
            props.put("server.port", 0);
            props.put("RELAY_MANAGEMENT_PORT", 0);
            props.put("RELAY_REDIS_HOST", "127.0.0.1");
            props.put("RELAY_REDIS_PORT", redis.port());
            props.put("RELAY_RABBIT_HOST", TestServices.rabbit().host());
            props.put("RELAY_RABBIT_PORT", TestServices.rabbit().port());
            props.put("spring.data.redis.username", "delay-relay");
            props.put("spring.data.redis.password", RELAY_PASSWORD);
            props.put("relay.wake.keyspace-events", "off");
            props.put("relay.ops.token", OPS_TOKEN);
            props.put("relay.metrics.sample-interval", "300ms");
            props.put("relay.fleet.pause-recheck-interval", "500ms");
            RelayTestKit.business(props, business, exchange, "due");
            RelayTestKit.business(props, dead, exchange, "nobody-listens", "threads", 1);
            ConfigurableApplicationContext first = web(props);
            ConfigurableApplicationContext second = web(props);
            LettuceConnectionFactory producerRedis = factory("delay-producer", PRODUCER_PASSWORD);
            try {
                int ops = Integer.parseInt(first.getEnvironment().getProperty("local.management.port"));
                String base = "/actuator/relay/" + business;
                RelayEngine secondEngine = second.getBean(RelayEngine.class);

                assertThat(http(ops, "POST", base + "/pause", "{\"by\":\"acl-test\"}"))
                        .startsWith("200 ");
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> secondEngine.relays().get(business).state().paused());
                assertThat(http(ops, "POST", base + "/resume", "{\"by\":\"acl-test\"}"))
                        .startsWith("200 ");
                await().atMost(Duration.ofSeconds(10))
                        .until(() ->
                                !secondEngine.relays().get(business).state().paused());

                RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(producerRedis);
                long later = serverNow(producerRedis) + 3_600_000;
                producer.schedule(business, "later-1", Instant.ofEpochMilli(later));
                producer.schedule(business, "later-2", Instant.ofEpochMilli(later));
                assertThat(http(ops, "GET", base + "/peek?search=later-", null))
                        .startsWith("200 ")
                        .contains("later-1")
                        .contains("later-2");
                assertThat(http(ops, "POST", base + "/deliver-now", "{\"member\":\"later-1\"}"))
                        .startsWith("200 ");
                assertThat(http(ops, "POST", base + "/cancel", "{\"member\":\"later-2\"}"))
                        .startsWith("200 ");
                assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(500)))
                        .extracting(Received::text)
                        .containsExactly("later-1");

                producer.scheduleAfter(dead, "dead-1", Duration.ZERO);
                producer.scheduleAfter(dead, "dead-2", Duration.ZERO);
                DelayQueueKeys deadKeys = DelayQueueKeys.forBusiness(dead);
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> zcard(producerRedis, deadKeys.dead(ShardSelector.shardOf("dead-1", 16)))
                                        + zcard(producerRedis, deadKeys.dead(ShardSelector.shardOf("dead-2", 16)))
                                >= 2);
                String deadBase = "/actuator/relay/" + dead;
                assertThat(http(ops, "GET", deadBase + "/dead", null))
                        .startsWith("200 ")
                        .contains("dead-1");
                assertThat(http(ops, "POST", deadBase + "/replay", "{\"member\":\"dead-1\"}"))
                        .startsWith("200 ");
                assertThat(http(ops, "POST", deadBase + "/purge", "{\"member\":\"dead-2\"}"))
                        .startsWith("200 ");
                assertThat(http(ops, "GET", "/actuator/relay", null)).startsWith("200 ");

                // the second replica reads the backlog the other one sampled (GET K:backlog), or samples it itself
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> admin("info", "commandstats").contains("cmdstat_get:"));
                for (ConfigurableApplicationContext replica : List.of(first, second)) {
                    MeterRegistry registry = replica.getBean(MeterRegistry.class);
                    await().atMost(Duration.ofSeconds(10))
                            .until(() -> registry.get(RelayMeterNames.BACKLOG_SAMPLE_AGE)
                                            .tag(RelayMeterNames.TAG_BUSINESS, business)
                                            .gauge()
                                            .value()
                                    < 2.0);
                }
                assertThat(admin("acl", "log"))
                        .as("ACL LOG: commands the rules refused")
                        .isBlank();
            } finally {
                producerRedis.destroy();
                second.close();
                first.close();
                admin("acl", "log", "reset");
            }
        }
    }

    private static ConfigurableApplicationContext web(Map<String, Object> properties) {
        return new SpringApplicationBuilder(TestRelayApplication.class)
                .web(WebApplicationType.SERVLET)
                .properties(properties)
                .run();
    }

    /** "status body" of an ops request made with the operator token. */
    private static String http(int port, String method, String path, String json) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10))
                .header(RelayOpsProperties.TOKEN_HEADER, OPS_TOKEN);
        if (json != null) {
            request.header("Content-Type", "application/json");
        }
        request.method(
                method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        HttpResponse<String> response =
                HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
        return response.statusCode() + " " + response.body();
    }

    private static long zcard(LettuceConnectionFactory factory, String key) {
        try (RedisConnection c = factory.getConnection()) {
            Long n = c.zSetCommands().zCard(key.getBytes(StandardCharsets.UTF_8));
            return n == null ? 0 : n;
        }
    }

    private static long serverNow(LettuceConnectionFactory factory) {
        try (RedisConnection c = factory.getConnection()) {
            return c.serverCommands().time();
        }
    }

    private static LettuceConnectionFactory factory(String user, String password) {
        RedisStandaloneConfiguration config = new RedisStandaloneConfiguration("127.0.0.1", redis.port());
        config.setUsername(user);
        config.setPassword(password);
        LettuceConnectionFactory factory = new LettuceConnectionFactory(config);
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    /** ACL SETUSER user rules... >password */
    private static void acl(String user, String password, String rules) {
        List<String> command = new ArrayList<>(List.of("acl", "setuser", user));
        command.addAll(List.of(rules.split(" ")));
        command.add(">" + password);
        assertThat(admin(command.toArray(String[]::new)).trim()).isEqualTo("OK");
    }

    private static String admin(String... args) {
        return redis.cli(args);
    }
}
