package io.delayrelay.app.security;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.faults.Shell;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.util.FileSystemUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay over TLS to Redis: a throwaway CA and server certificate (openssl, temp dir), a redis-server with only a
 * TLS port (6392), and the relay configured with {@code spring.data.redis.ssl.enabled} and a PEM SSL bundle.
 */
class RedisTlsTest {

    static final int TLS_PORT = 6392;
    private static Path dir;

    @BeforeAll
    static void startTlsRedis() throws Exception {
        dir = Files.createTempDirectory("delay-relay-redis-tls");
        String d = dir.toString();
        Shell.run(
                60,
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=delay-relay test CA",
                "-keyout",
                d + "/ca.key",
                "-out",
                d + "/ca.crt");
        Shell.run(
                60,
                "openssl",
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=localhost",
                "-keyout",
                d + "/server.key",
                "-out",
                d + "/server.csr");
        Files.writeString(dir.resolve("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        Shell.run(
                60,
                "openssl",
                "x509",
                "-req",
                "-in",
                d + "/server.csr",
                "-CA",
                d + "/ca.crt",
                "-CAkey",
                d + "/ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                d + "/ext.cnf",
                "-out",
                d + "/server.crt");
        Shell.run(
                20,
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                "0",
                "--tls-port",
                Integer.toString(TLS_PORT),
                "--tls-cert-file",
                d + "/server.crt",
                "--tls-key-file",
                d + "/server.key",
                "--tls-ca-cert-file",
                d + "/ca.crt",
                "--tls-auth-clients",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                d,
                "--pidfile",
                d + "/redis.pid",
                "--logfile",
                d + "/redis.log");
        await().atMost(Duration.ofSeconds(10))
                .ignoreExceptions()
                .until(() -> cli("ping").trim().equals("PONG"));
    }

    @AfterAll
    static void stopTlsRedis() {
        try {
            cli("shutdown", "nosave");
        } catch (IllegalStateException e) {
            // already gone
        } finally {
            FileSystemUtils.deleteRecursively(dir.toFile());
        }
    }

    @Test
    void relayDeliversOverTlsWithAPemTrustBundle() throws Exception {
        try (RelayTestKit kit = new RelayTestKit()) {
            String business = kit.business("tls");
            String exchange = kit.exchange("tls");
            BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
            Map<String, Object> props = kit.baseProperties();
            props.put("spring.data.redis.port", TLS_PORT);
            props.put("spring.data.redis.ssl.enabled", true);
            props.put("spring.data.redis.ssl.bundle", "redis");
            props.put("spring.ssl.bundle.pem.redis.truststore.certificate", "file:" + dir.resolve("ca.crt"));
            RelayTestKit.business(props, business, exchange, "due");
            ConfigurableApplicationContext relay = kit.startRelay(props);

            RedisDelayedMessageProducer producer =
                    RedisDelayedMessageProducer.withDefaultKeys(relay.getBean(RedisConnectionFactory.class));
            producer.scheduleAfter(business, "over TLS", Duration.ofMillis(100));
            List<Received> all = RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ofMillis(200));
            assertThat(all).extracting(Received::text).containsExactly("over TLS");
            assertThat(Shell.run(
                            10,
                            "redis-cli",
                            "--tls",
                            "--cacert",
                            dir.resolve("ca.crt").toString(),
                            "-p",
                            Integer.toString(TLS_PORT),
                            "info",
                            "stats"))
                    .contains("total_connections_received");
        }
    }

    private static String cli(String... args) {
        String[] command = new String[args.length + 6];
        command[0] = "redis-cli";
        command[1] = "--tls";
        command[2] = "--cacert";
        command[3] = dir.resolve("ca.crt").toString();
        command[4] = "-p";
        command[5] = Integer.toString(TLS_PORT);
        System.arraycopy(args, 0, command, 6, args.length);
        return Shell.run(10, command);
    }
}
