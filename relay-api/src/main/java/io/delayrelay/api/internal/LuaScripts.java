package io.delayrelay.api.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Loads a Lua script resource once, as text, with the fragments it includes. (A {@link RedisScript} built on a
 * {@code Resource} re-checks the resource's modification time on every call, under a lock: measurable on the hot
 * path.)
 */
public final class LuaScripts {

    /** A line {@code -- include: lib/x.lua}: replaced by that fragment, relative to the including script's folder. */
    private static final Pattern INCLUDE = Pattern.compile("(?m)^-- include: (\\S+)$");

    private LuaScripts() {}

    /** The script at a classpath location, read now. */
    public static <T> RedisScript<T> load(String classpathLocation, Class<T> resultType) {
        return RedisScript.of(text(classpathLocation), resultType);
    }

    /**
     * The text a script runs as: the resource with each include line replaced by the fragment it names. A fragment
     * has one source, so two scripts that share logic (ack.lua's settle, carried by pop.lua) cannot drift apart.
     */
    public static String text(String classpathLocation) {
        String text = read(classpathLocation);
        String folder = classpathLocation.substring(0, classpathLocation.lastIndexOf('/') + 1);
        Matcher include = INCLUDE.matcher(text);
        StringBuilder out = new StringBuilder(text.length());
        while (include.find()) {
            include.appendReplacement(out, Matcher.quoteReplacement(read(folder + include.group(1))));
        }
        include.appendTail(out);
        return out.toString();
    }

    private static String read(String classpathLocation) {
        ClassPathResource resource = new ClassPathResource(classpathLocation);
        try (InputStream in = resource.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Lua script " + classpathLocation, e);
        }
    }
}
