package io.delayrelay.app.ops;

import java.util.List;
import java.util.Map;
import java.util.Properties;

import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;

@ExtendWith(OutputCaptureExtension.class)
class RedisGuardrailsTest {

    private final RelayTestKit kit = new RelayTestKit();
    /** A Redis of this test's own (free port), configured the way that loses entries. */
    private PrivateRedis redis;

    @AfterEach
    void cleanUp() {
        kit.close();
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void warnsAtStartWhenRedisMayEvictEntriesOrLoseThemOnRestart(CapturedOutput output) throws Exception {
        redis = PrivateRedis.builder()
                .args("--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
                .start();
        Map<String, Object> properties = RelayTestKit.business(
                kit.baseProperties(), kit.business("guard"), kit.exchange("guard"), "rk", "paused", true);
        properties.put("spring.data.redis.port", redis.port());

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
}
