package io.delayrelay.app.ops;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(OutputCaptureExtension.class)
class RedisGuardrailsTest {

    /** A Redis of this test's own (port in the console tests' range), configured the way that loses entries. */
    private static final int PORT = 18531;

    private final RelayTestKit kit = new RelayTestKit();
    private Process redis;

    @AfterEach
    void cleanUp() throws Exception {
        kit.close();
        if (redis != null) {
            redis.destroy();
            redis.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void warnsAtStartWhenRedisMayEvictEntriesOrLoseThemOnRestart(CapturedOutput output) throws Exception {
        Path dir = Files.createTempDirectory("relay-guardrails");
        redis = new ProcessBuilder(
                        "redis-server",
                        "--port",
                        Integer.toString(PORT),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--maxmemory",
                        "64mb",
                        "--maxmemory-policy",
                        "allkeys-lru",
                        "--dir",
                        dir.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile())
                .start();
        await().atMost(Duration.ofSeconds(10)).until(RedisGuardrailsTest::listening);
        Map<String, Object> properties = RelayTestKit.business(
                kit.baseProperties(), kit.business("guard"), kit.exchange("guard"), "rk", "paused", true);
        properties.put("spring.data.redis.port", PORT);

        ConfigurableApplicationContext context = kit.startRelay(properties);

        assertThat(output.getOut())
                .contains("Redis maxmemory-policy is allkeys-lru: when Redis reaches maxmemory (64.00M)")
                .contains("Redis AOF is off (appendonly no)");
        assertThat(context.getBean(RedisGuardrails.class).check()).hasSize(2);
    }

    @Test
    void staysQuietForNoevictionWithAof() {
        Properties memory = new Properties();
        memory.setProperty("maxmemory_policy", "noeviction");
        Properties persistence = new Properties();
        persistence.setProperty("aof_enabled", "1");
        assertThat(RedisGuardrails.warnings(memory, persistence)).isEmpty();
        memory.setProperty("maxmemory_policy", "volatile-lru");
        assertThat(RedisGuardrails.warnings(memory, persistence))
                .as("relay keys carry no TTL")
                .isEmpty();
        memory.setProperty("maxmemory_policy", "allkeys-lfu");
        assertThat(RedisGuardrails.warnings(memory, persistence))
                .singleElement()
                .asString()
                .contains("allkeys-lfu");
        assertThat(RedisGuardrails.warnings(null, null)).isEqualTo(List.of());
    }

    private static boolean listening() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", PORT), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
