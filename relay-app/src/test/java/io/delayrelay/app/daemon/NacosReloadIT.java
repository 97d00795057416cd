package io.delayrelay.app.daemon;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.stream.Collectors;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TcpProxy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Hot reload from a real Nacos server, with the exec jar as a process the way users run it
 * ({@code SPRING_PROFILES_ACTIVE=nacos java -jar relay-app-*-exec.jar}): the data id's value wins over a local
 * {@code application.yaml}, every published shard count reaches {@code K:meta} within seconds, a bad value is
 * rejected (WARN and metric) and the old one kept, entries written to retired shards are all delivered, and a second
 * instance started with the old local configuration still scans the union of the shard counts.
 */
@EnabledIfEnvironmentVariable(
        named = "NACOS_ADDR",
        matches = ".+",
        disabledReason = "needs a real Nacos server: "
                + "run ../shared/tools/nacos-server.sh start (build it once first, see the script's header), then set "
                + "NACOS_ADDR=127.0.0.1:8848")
class NacosReloadIT {

    private static final String GROUP = "DELAY_RELAY_IT";
    private static final String TOKEN = "nacos-it-token-0123456789";
    private static final Duration START = Duration.ofSeconds(150);

    private final RelayTestKit kit = new RelayTestKit();
    private final NacosServerApi nacos = new NacosServerApi(System.getenv("NACOS_ADDR"));
    private final List<RelayProcess> processes = new ArrayList<>();
    private String dataId;

    @TempDir
    Path dir;

    @AfterEach
    void cleanUp() throws Exception {
        for (RelayProcess process : processes) {
            process.close();
        }
        if (dataId != null) {
            nacos.remove(dataId, GROUP);
        }
        kit.close();
    }

    private static String businessYaml(String business, String exchange, int shards) {
        return "relay:\n  businesses:\n    " + business + ":\n      exchange: " + exchange
                + "\n      routing-key: due\n      shards: " + shards + "\n";
    }

    private String metaShards(String business) {
        try (RedisConnection c = kit.redis()) {
            byte[] value = c.hashCommands()
                    .hGet(
                            DelayQueueKeys.bytes(
                                    DelayQueueKeys.forBusiness(business).meta()),
                            DelayQueueKeys.bytes(MetaFields.SHARDS));
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }

    /** Publishes a shard count and returns the seconds until K:meta shows it. */
    private double publishAndTime(String business, String exchange, int shards) throws Exception {
        long start = System.nanoTime();
        nacos.publish(dataId, GROUP, businessYaml(business, exchange, shards));
        await().atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> String.valueOf(shards).equals(metaShards(business)));
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("FIGURE nacos reload: shards %d published -> K:meta after %.2f s%n", shards, seconds);
        return seconds;
    }

    private static void awaitStarted(RelayProcess process, OpsClient ops) {
        await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> {
            if (!process.isAlive()) {
                throw new AssertionError("relay exited:\n" + process.output());
            }
            return process.started() && ops.get("/actuator/health/readiness") != null;
        });
    }

    /** Starts the exec jar with web on; returns its process, management port in {@code managementPort}. */
    private RelayProcess start(String name, Map<String, Object> props, int managementPort) throws Exception {
        props.put("server.port", FreePort.next());
        props.put("management.server.port", managementPort);
        props.put("relay.ops.token", TOKEN);
        props.put("relay.reshard-grace", "2s");
        RelayProcess process = RelayProcess.start("nacos-" + name, props, true, RelayProcess.C1);
        processes.add(process);
        return process;
    }

    @Test
    void followsEveryPublishedShardCountRejectsABadOneAndDeliversWhatRetiredShardsHeld() throws Exception {
        String business = kit.business("nacos");
        String exchange = kit.exchange("nacos");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        dataId = "delay-relay-it-" + business + ".yaml";
        nacos.publish(dataId, GROUP, businessYaml(business, exchange, 4));
        // The local file says otherwise: the config center wins.
        Files.writeString(dir.resolve("application.yaml"), businessYaml(business, exchange, 2) + "      threads: 2\n");

        Map<String, Object> props = kit.baseProperties();
        props.put("spring.profiles.active", "nacos");
        props.put("NACOS_ADDR", System.getenv("NACOS_ADDR"));
        props.put("NACOS_DATA_ID", dataId);
        props.put("NACOS_GROUP", GROUP);
        props.put("spring.config.additional-location", "optional:file:" + dir.toAbsolutePath() + "/");
        int managementA = FreePort.next();
        RelayProcess a = start("a", props, managementA);
        OpsClient opsA = new OpsClient(managementA, TOKEN);
        awaitStarted(a, opsA);
        assertThat(metaShards(business))
                .as("Nacos's shards: 4 wins over the local file's 2")
                .isEqualTo("4");
        assertThat(opsA.get("/actuator/relay/" + business)
                        .get("config")
                        .get("threads")
                        .asInt())
                .as("what Nacos does not set comes from the local file")
                .isEqualTo(2);

        double toEight = publishAndTime(business, exchange, 8);
        long due = kit.redisNowMs() + 4_000;
        List<String> sent = new ArrayList<>();
        try (RedisConnection c = kit.redis()) {
            DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
            for (int shard = 0; shard < 8; shard++) {
                for (int i = 0; i < 5; i++) {
                    String member = "shard-" + shard + "-" + i;
                    c.zSetCommands().zAdd(DelayQueueKeys.bytes(keys.shard(shard)), due, DelayQueueKeys.bytes(member));
                    sent.add(member);
                }
            }
            // Due in 10 minutes: keeps retired shard 6 non-empty, so the 8 stays in K:meta's draining list.
            c.zSetCommands().zAdd(DelayQueueKeys.bytes(keys.shard(6)), due + 600_000, DelayQueueKeys.bytes("far"));
        }
        double toTwo = publishAndTime(business, exchange, 2);
        assertThat(opsA.get("/actuator/relay/" + business).get("scanWidth").asInt())
                .as("retired shards still scanned")
                .isEqualTo(8);

        nacos.publish(dataId, GROUP, businessYaml(business, exchange, 0));
        String rejected = "business=" + business + ": reloaded configuration rejected, previous settings kept: "
                + "relay.businesses." + business + ".shards=0: must be between 1 and 16384";
        await().atMost(Duration.ofSeconds(30)).until(() -> a.output().contains(rejected));
        String metric = "delay_relay_config_rejected_total{business=\"" + business + "\"} 1.0";
        await().atMost(Duration.ofSeconds(5))
                .until(() -> opsA.text("/actuator/prometheus").contains(metric));
        assertThat(metaShards(business)).as("the bad value is not applied").isEqualTo("2");

        // every entry once and never early, retired shards included ("far" is not due: it would be unexpected)
        Deliveries.Report report = Deliveries.expect(sent)
                .scheduledDue(sent.stream().collect(Collectors.toMap(m -> m, m -> due)))
                .check(received, Duration.ofSeconds(30));
        long fromRetired = report.all().stream()
                .filter(r -> r.header(RelayHeaders.SHARD) >= 2)
                .count();
        assertThat(fromRetired)
                .as("entries relayed from shards retired by 8 -> 2")
                .isEqualTo(30);
        System.out.printf(
                "FIGURE nacos reload: %d of %d entries delivered (%d from shards retired by 8 -> 2); "
                        + "publish -> K:meta: 8 in %.2f s, 2 in %.2f s%n",
                report.delivered(), sent.size(), fromRetired, toEight, toTwo);

        // A second instance that never saw Nacos, started with the old local configuration (4 shards).
        Map<String, Object> old = RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "shards", 4);
        int managementB = FreePort.next();
        RelayProcess b = start("b-old-config", old, managementB);
        OpsClient opsB = new OpsClient(managementB, TOKEN);
        awaitStarted(b, opsB);
        int width = opsB.get("/actuator/relay/" + business).get("scanWidth").asInt();
        System.out.printf("FIGURE nacos reload: instance with the old local config (4) scans %d shards%n", width);
        assertThat(width)
                .as("the old instance scans the union of 4 and the still draining 8")
                .isEqualTo(8);
        await().atMost(Duration.ofSeconds(10))
                .until(() ->
                        opsA.get("/actuator/relay/" + business).get("scanWidth").asInt() == 8);
        assertThat(kit.scheduled(business))
                .as("the far entry is still there, nothing orphaned")
                .isEqualTo(1);
    }

    @Test
    void aScheduleFromNacosFiresAChangeAppliesFromItsNextSlotAndABadOneIsRejected() throws Exception {
        String business = kit.business("nacossched");
        String exchange = kit.exchange("nacossched");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        dataId = "delay-relay-it-" + business + ".yaml";
        String name = business + "-tick";
        nacos.publish(
                dataId, GROUP, businessYaml(business, exchange, 2) + scheduleYaml(business, name, "1s", "one", "UTC"));
        Map<String, Object> props = kit.baseProperties();
        props.put("spring.profiles.active", "nacos");
        props.put("NACOS_ADDR", System.getenv("NACOS_ADDR"));
        props.put("NACOS_DATA_ID", dataId);
        props.put("NACOS_GROUP", GROUP);
        int management = FreePort.next();
        RelayProcess relay = start("sched", props, management);
        awaitStarted(relay, new OpsClient(management, TOKEN));
        assertThat(RelayTestKit.collect(received, 2, Duration.ofSeconds(15), Duration.ZERO))
                .extracting(Received::text)
                .containsExactly("one", "one");

        // a bad zone is rejected whole: WARN, metric, and the schedule keeps firing as it was
        nacos.publish(
                dataId,
                GROUP,
                businessYaml(business, exchange, 2) + scheduleYaml(business, name, "1s", "bad", "Nowhere/Land"));
        await().atMost(Duration.ofSeconds(30))
                .until(() -> relay.output().contains("reloaded relay.schedules rejected, the running schedules stay"));
        received.clear();
        assertThat(RelayTestKit.collect(received, 2, Duration.ofSeconds(10), Duration.ZERO))
                .extracting(Received::text)
                .containsExactly("one", "one");

        // a new period and payload apply from the next slot, without a double fire
        nacos.publish(
                dataId, GROUP, businessYaml(business, exchange, 2) + scheduleYaml(business, name, "2s", "two", "UTC"));
        List<Received> after = new ArrayList<>();
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            received.drainTo(after);
            return after.stream().filter(r -> r.text().equals("two")).count() >= 2;
        });
        List<Long> two = after.stream()
                .filter(r -> r.text().equals("two"))
                .map(r -> r.header(RelayHeaders.SLOT))
                .toList();
        assertThat(two.get(1) - two.get(0)).isEqualTo(2_000);
        assertThat(after.stream().map(Received::messageId)).doesNotHaveDuplicates();
        System.out.printf("FIGURE nacos reload: schedule every 1s -> 2s, new slots %s%n", two);
    }

    private static String scheduleYaml(String business, String name, String every, String payload, String zone) {
        return "  schedules:\n    " + name + ":\n      business: " + business + "\n      every: " + every
                + "\n      payload: " + payload + "\n      zone: " + zone + "\n";
    }

    @Test
    void keepsTheLastConfigurationWhileNacosIsAwayWarnsOnceAndCatchesUpWhenItIsBack() throws Exception {
        String business = kit.business("nacos-away");
        String exchange = kit.exchange("nacos-away");
        dataId = "delay-relay-it-" + business + ".yaml";
        nacos.publish(dataId, GROUP, businessYaml(business, exchange, 4));
        // The Nacos client talks gRPC on the server port + an offset: route it through a proxy the test can cut.
        int nacosGrpc = Integer.parseInt(System.getenv("NACOS_ADDR").replaceAll(".*:", "")) + 1000;
        int proxyPort = FreePort.next();
        String relayNacosAddr = "127.0.0.1:" + (proxyPort - 1); // gRPC port = this + offset 1 = the proxy
        int management = FreePort.next();
        try (TcpProxy proxy = new TcpProxy(proxyPort, nacosGrpc)) {
            Map<String, Object> props = kit.baseProperties();
            props.put("spring.profiles.active", "nacos");
            props.put("NACOS_ADDR", relayNacosAddr);
            props.put("NACOS_DATA_ID", dataId);
            props.put("NACOS_GROUP", GROUP);
            props.put("relay.nacos.check-interval", "500ms");
            props.put("server.port", FreePort.next());
            props.put("management.server.port", management);
            RelayProcess relay =
                    RelayProcess.start("nacos-away", props, true, RelayProcess.C1, "-Dnacos.server.grpc.port.offset=1");
            processes.add(relay);
            awaitStarted(relay, new OpsClient(management, TOKEN));
            assertThat(metaShards(business)).isEqualTo("4");

            proxy.cut();
            String lost =
                    "Nacos server " + relayNacosAddr + " unreachable: keeping the last good configuration of data id '"
                            + dataId + "' (group " + GROUP + "); reconnecting";
            await().atMost(Duration.ofSeconds(30)).until(() -> relay.output().contains(lost));
            nacos.publish(dataId, GROUP, businessYaml(business, exchange, 8));
            // the outage goes on (more failed reconnects): still one WARN
            await().during(Duration.ofSeconds(3))
                    .atMost(Duration.ofSeconds(5))
                    .until(() ->
                            relay.output().lines().filter(l -> l.contains(lost)).count() == 1);
            assertThat(relay.isAlive()).isTrue();
            assertThat(metaShards(business)).as("last good configuration kept").isEqualTo("4");

            long back = System.nanoTime();
            proxy.restore();
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> "8".equals(metaShards(business)));
            System.out.printf(
                    "FIGURE nacos outage: change published while away applied %.1f s after the server was "
                            + "reachable again%n",
                    (System.nanoTime() - back) / 1e9);
            await().atMost(Duration.ofSeconds(5)).until(() -> relay.output()
                    .contains("Nacos server " + relayNacosAddr + " reachable: following data id '" + dataId));
        }
    }

    @Test
    void aMissingDataIdFailsStartUpNamingItOrWithOptionalIsAppliedOnceItIsPublished() throws Exception {
        String business = kit.business("nacos-missing");
        String exchange = kit.exchange("nacos-missing");
        dataId = "delay-relay-it-" + business + ".yaml";
        Map<String, Object> props = kit.baseProperties();
        props.put("spring.profiles.active", "nacos");
        props.put("NACOS_ADDR", System.getenv("NACOS_ADDR"));
        props.put("NACOS_DATA_ID", dataId);
        props.put("NACOS_GROUP", GROUP);
        String line = "Nacos data id '" + dataId + "' (group " + GROUP + ") is missing or empty on server "
                + System.getenv("NACOS_ADDR") + " (namespace public)";

        try (RelayProcess strict = RelayProcess.start("nacos-missing-strict", props, false, RelayProcess.C1)) {
            Integer exit = strict.awaitExit(START);
            assertThat(exit).as(strict.output()).isNotNull().isNotZero();
            assertThat(strict.output().lines().filter(l -> l.equals(line)).count())
                    .as(strict.output())
                    .isEqualTo(1);
        }

        props.put("relay.nacos.optional", "true");
        int management = FreePort.next();
        RelayProcess optional = start("missing-optional", props, management);
        awaitStarted(optional, new OpsClient(management, TOKEN));
        assertThat(optional.output())
                .contains("WARN")
                .contains(line + "; relay.nacos.optional=true: starting on local "
                        + "configuration and retrying in the background");
        assertThat(metaShards(business)).as("no such business yet").isNull();
        nacos.publish(dataId, GROUP, businessYaml(business, exchange, 4));
        await().atMost(Duration.ofSeconds(30)).until(() -> "4".equals(metaShards(business)));
    }
}
