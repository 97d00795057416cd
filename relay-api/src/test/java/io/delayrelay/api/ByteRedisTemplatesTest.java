package io.delayrelay.api;

import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;

import io.delayrelay.api.internal.ByteRedisTemplates;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static org.assertj.core.api.Assertions.assertThat;

class ByteRedisTemplatesTest {

    private final byte[] key = ("byte-templates-test-" + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8);
    private LettuceConnectionFactory factory;
    private RedisTemplate<byte[], byte[]> template;

    @BeforeEach
    void connect() {
        factory = LocalRedis.connect();
        template = ByteRedisTemplates.create(factory);
    }

    @AfterEach
    void cleanUp() {
        try (RedisConnection c = factory.getConnection()) {
            c.keyCommands().del(key);
        }
        factory.destroy();
    }

    @Test
    void callbacksGetTheConnectionItselfNotAProxyAndBytesGoThroughUnchanged() {
        RedisConnection handed = template.execute((RedisCallback<RedisConnection>) c -> c);
        assertThat(Proxy.isProxyClass(handed.getClass()))
                .as("no close-suppressing proxy per call")
                .isFalse();

        byte[] value = {(byte) 0xff, 0, 'D', 'R', (byte) 0x80};
        List<?> reply = template.execute(
                RedisScript.of("redis.call('SET', KEYS[1], ARGV[1]); return {redis.call('GET', KEYS[1])}", List.class),
                List.of(key),
                value);
        assertThat(reply).hasSize(1);
        assertThat((byte[]) reply.get(0)).containsExactly(value);
    }
}
