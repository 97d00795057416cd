package io.delayrelay.app.security;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.faults.Shell;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay as a RabbitMQ user that may only write to its exchanges ({@code set_permissions '^$' '^(x)$' '^$'}):
 * the passive exchange check at start needs no permission, publishing works; a missing configure or write
 * permission is reported naming ACCESS_REFUSED and the exchange. The user is deleted afterwards.
 */
@ExtendWith(OutputCaptureExtension.class)
class RabbitPermissionsTest {

    private final RelayTestKit kit = new RelayTestKit();
    private final String user = "relay-test-" + UUID.randomUUID().toString().substring(0, 8);
    private final String password =
            "rabbit-Secret-" + UUID.randomUUID().toString().substring(0, 8);

    @BeforeEach
    void addUser() {
        Shell.run(60, "rabbitmqctl", "add_user", user, password);
    }

    @AfterEach
    void deleteUser() {
        try {
            Shell.run(60, "rabbitmqctl", "delete_user", user);
        } finally {
            kit.close();
        }
    }

    @Test
    void relayWithWriteOnlyPermissionOnItsExchangeDeliversAndReportsRefusals(CapturedOutput output) throws Exception {
        String allowed = kit.exchange("sec-ok");
        String notWritable = kit.exchange("sec-nowrite");
        String notConfigurable = kit.exchange("sec-noconf");
        Shell.run(
                60,
                "rabbitmqctl",
                "set_permissions",
                "-p",
                "/",
                user,
                "^$",
                "^(" + quote(allowed) + "|" + quote(notConfigurable) + ")$",
                "^$");
        BlockingQueue<Received> received = kit.consume(kit.queue(allowed, "due"));
        kit.queue(notWritable, "due");
        BlockingQueue<Received> declaredReceived = kit.consume(kit.queue(notConfigurable, "due"));

        String ok = kit.business("sec-ok");
        String noWrite = kit.business("sec-nowrite");
        String noConf = kit.business("sec-noconf");
        Map<String, Object> props = kit.baseProperties();
        props.put("spring.rabbitmq.username", user);
        props.put("spring.rabbitmq.password", password);
        RelayTestKit.business(props, ok, allowed, "due");
        RelayTestKit.business(props, noWrite, notWritable, "due", "max-attempts", 2, "retry-delay", "100ms");
        RelayTestKit.business(props, noConf, notConfigurable, "due", "declare-exchange", true);
        kit.startRelay(props);

        kit.producer().scheduleAfter(ok, "written with write permission only", Duration.ZERO);
        kit.producer().scheduleAfter(noConf, "exchange exists, declare refused", Duration.ZERO);
        kit.producer().scheduleAfter(noWrite, "no write permission", Duration.ZERO);

        List<Received> all = RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(200));
        assertThat(all).extracting(Received::text).containsExactly("written with write permission only");
        assertThat(RelayTestKit.collect(declaredReceived, 1, Duration.ofSeconds(10), Duration.ofMillis(200)))
                .extracting(Received::text)
                .containsExactly("exchange exists, declare refused");
        assertThat(output.getAll())
                .as("the passive check of an existing exchange needs no permission")
                .doesNotContain("could not check exchange '" + allowed + "'");
        assertThat(output.getAll())
                .as("a refused declare is reported with the exchange and the broker's reason")
                .contains("could not check exchange '" + notConfigurable + "'")
                .contains("ACCESS_REFUSED");

        DelayQueueKeys keys = DelayQueueKeys.forBusiness(noWrite);
        int shard = ShardSelector.shardOf("no write permission", 16);
        await().atMost(Duration.ofSeconds(15)).until(() -> deadReason(keys, shard, "no write permission") != null);
        String reason = deadReason(keys, shard, "no write permission");
        System.out.println("dead-letter reason without write permission: " + reason);
        assertThat(reason).as("dead-letter reason").contains("ACCESS_REFUSED");
        assertThat(output.getAll()).as("password never logged").doesNotContain(password);
    }

    private String deadReason(DelayQueueKeys keys, int shard, String member) {
        try (RedisConnection c = kit.redis()) {
            byte[] reason = c.hashCommands()
                    .hGet(DelayQueueKeys.bytes(keys.deadReasons(shard)), member.getBytes(StandardCharsets.UTF_8));
            return reason == null ? null : new String(reason, StandardCharsets.UTF_8);
        }
    }

    private static String quote(String name) {
        return name.replace(".", "\\.");
    }
}
