package io.delayrelay.app.engine;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.internal.LuaScripts;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisScriptingCommands;
import org.springframework.data.redis.connection.RedisServerCommands;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.util.ClassUtils;

/**
 * A {@link RedisConnectionFactory} whose Lua scripts and {@code TIME} read a clock the test sets, so a model can
 * decide what is due. Production code keeps Redis {@code TIME}: every relay and producer script reads the clock in
 * exactly one {@code redis.call('TIME')} (its header says so), and here each script the relay or a producer sends
 * (by SHA or by text) is swapped for a copy whose one clock call reads the hash {@value #CLOCK_KEY} instead; Java
 * callers of {@code TIME} (the dead-set trimmer, the backlog reader, the pause store) get the same clock. A script
 * that is not one of the project's resources, or one that reads the clock in more than one place, fails the test:
 * time would then escape the model.
 */
final class PinnedClockRedis {

    /** The hash the pinned scripts read the time from: fields {@code s} and {@code us}, like TIME's reply. */
    static final String CLOCK_KEY = "delay-relay-model:clock";

    private static final String CLOCK_CALL = "redis.call('TIME')";
    private static final String PINNED_CALL = "redis.call('HMGET', '" + CLOCK_KEY + "', 's', 'us')";
    private static final String[] SCRIPT_FOLDERS = {
        "io/delayrelay/app/lua/", "io/delayrelay/api/lua/", "io/delayrelay/api/internal/"
    };

    private final RedisConnectionFactory target;
    /** SHA of a script as the relay sends it -> the script to run instead (itself when it reads no clock). */
    private final Map<String, Swap> swaps = new HashMap<>();

    private volatile long nowMs;

    private record Swap(String sha, byte[] text) {}

    PinnedClockRedis(RedisConnectionFactory target) {
        this.target = target;
        PathMatchingResourcePatternResolver resolver = new PathMatchingResourcePatternResolver();
        try {
            for (String folder : SCRIPT_FOLDERS) {
                Resource[] found = resolver.getResources("classpath*:" + folder + "*.lua");
                if (found.length == 0) {
                    throw new IllegalStateException("no Lua scripts found under " + folder);
                }
                for (Resource resource : found) {
                    // as the relay sends it: with the fragments it includes
                    String text = LuaScripts.text(folder + resource.getFilename());
                    String pinned = pin(resource.getFilename(), text);
                    swaps.put(
                            RedisScript.of(text).getSha1(),
                            new Swap(RedisScript.of(pinned).getSha1(), bytes(pinned)));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The script with its one clock read replaced by the pinned clock; a script that reads none is returned as is. */
    static String pin(String name, String text) {
        int first = text.indexOf(CLOCK_CALL);
        if (first < 0) {
            return text;
        }
        if (text.indexOf(CLOCK_CALL, first + 1) >= 0) {
            throw new IllegalStateException(name + " reads " + CLOCK_CALL
                    + " in more than one place: the model test can pin only one clock read per script");
        }
        return text.replace(CLOCK_CALL, PINNED_CALL);
    }

    /** Sets the clock every script and TIME call sees, epoch ms. */
    void setNow(long epochMs) {
        nowMs = epochMs;
        try (RedisConnection c = target.getConnection()) {
            c.hashCommands()
                    .hMSet(
                            bytes(CLOCK_KEY),
                            Map.of(
                                    bytes("s"), bytes(Long.toString(epochMs / 1000)),
                                    bytes("us"), bytes(Long.toString((epochMs % 1000) * 1000))));
        }
    }

    long nowMs() {
        return nowMs;
    }

    /** A connection factory over the target whose connections see the pinned clock. */
    RedisConnectionFactory factory() {
        return (RedisConnectionFactory) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {RedisConnectionFactory.class}, (proxy, method, args) -> {
                    Object result = invoke(target, method, args);
                    if (result instanceof RedisConnection connection
                            && method.getName().equals("getConnection")) {
                        return wrap(connection, connection.getClass());
                    }
                    return result;
                });
    }

    private Object wrap(Object delegate, Class<?> type) {
        Class<?>[] interfaces =
                ClassUtils.getAllInterfacesForClass(type, getClass().getClassLoader());
        InvocationHandler handler = (proxy, method, args) -> switch (method.getName()) {
            case "scriptingCommands" -> wrap(invoke(delegate, method, args), RedisScriptingCommands.class);
            case "serverCommands" -> wrap(invoke(delegate, method, args), RedisServerCommands.class);
            case "time" -> args == null || args.length == 0
                    ? nowMs
                    : ((TimeUnit) args[0]).convert(nowMs, TimeUnit.MILLISECONDS);
            case "eval", "evalSha" -> invoke(delegate, method, swappedArgs(method, args));
            default -> invoke(delegate, method, args);
        };
        return Proxy.newProxyInstance(getClass().getClassLoader(), interfaces, handler);
    }

    /** EVAL of a known text runs its pinned copy as EVAL; EVALSHA of a known SHA runs its pinned copy's SHA. */
    private Object[] swappedArgs(Method method, Object[] args) {
        Object[] out = args.clone();
        if (method.getName().equals("eval")) {
            String text = new String((byte[]) args[0], StandardCharsets.UTF_8);
            out[0] = swap(RedisScript.of(text).getSha1()).text();
        } else if (args[0] instanceof byte[] sha) {
            out[0] = bytes(swap(new String(sha, StandardCharsets.US_ASCII)).sha());
        } else {
            out[0] = swap((String) args[0]).sha();
        }
        return out;
    }

    private Swap swap(String sha) {
        Swap swap = swaps.get(sha);
        if (swap == null) {
            throw new AssertionError("a script with SHA " + sha
                    + " is not one of the relay's or the producers' Lua resources: its clock cannot be pinned");
        }
        return swap;
    }

    private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
