package io.delayrelay.app.security;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.app.faults.Shell;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.util.FileSystemUtils;

/**
 * The relay over TLS to Redis: a throwaway CA and server certificate (openssl, temp dir), a redis-server with only a
 * TLS port (a free one, the plain port off), and the relay configured with {@code spring.data.redis.ssl.enabled} and a PEM SSL bundle.
 */
class RedisTlsTest {

    private static Path dir;
    private static PrivateRedis redis;

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
        redis = PrivateRedis.builder()
                .dir(dir.resolve("redis"))
                .tlsOnly()
                .args(
                        "--tls-cert-file",
                        d + "/server.crt",
                        "--tls-key-file",
                        d + "/server.key",
                        "--tls-ca-cert-file",
                        d + "/ca.crt",
                        "--tls-auth-clients",
                        "no")
                .cliArgs("--tls", "--cacert", d + "/ca.crt")
                .start();
    }

    @AfterAll
    static void stopTlsRedis() {
        try {
            if (redis != null) {
                redis.close();
            }
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
            props.put("spring.data.redis.port", redis.port());
            props.put("spring.data.redis.ssl.enabled", true);
            props.put("spring.data.redis.ssl.bundle", "redis");
            props.put("spring.ssl.bundle.pem.redis.truststore.certificate", "file:" + dir.resolve("ca.crt"));
            RelayTestKit.business(props, business, exchange, "due");
            ConfigurableApplicationContext relay = kit.startRelay(props);

            RedisDelayedMessageProducer producer =
                    RedisDelayedMessageProducer.withDefaultKeys(relay.getBean(RedisConnectionFactory.class));
            producer.scheduleAfter(business, "over TLS", Duration.ofMillis(100));
            // the server has no plain port: a delivery at all proves the relay spoke TLS to it
            Deliveries.expect("over TLS").check(received, Duration.ofSeconds(10));
        }
    }
}
