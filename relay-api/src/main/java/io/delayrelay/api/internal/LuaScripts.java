package io.delayrelay.api.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Loads a Lua script resource once, as text. (A {@link RedisScript} built on a {@code Resource} re-checks the
 * resource's modification time on every call, under a lock: measurable on the hot path.)
 */
public final class LuaScripts {

    private LuaScripts() {}

    /** The script at a classpath location, read now. */
    public static <T> RedisScript<T> load(String classpathLocation, Class<T> resultType) {
        ClassPathResource resource = new ClassPathResource(classpathLocation);
        try (InputStream in = resource.getInputStream()) {
            return RedisScript.of(new String(in.readAllBytes(), StandardCharsets.UTF_8), resultType);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Lua script " + classpathLocation, e);
        }
    }
}
