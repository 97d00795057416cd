package io.delayrelay.api;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.QueryTimeoutException;
import org.springframework.data.redis.RedisSystemException;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.util.ClassUtils;

/**
 * Runs many calls of the producer's integer scripts in one round trip: on a Lettuce connection every call is sent
 * before the first reply is awaited (standalone or Redis Cluster; Lettuce routes each call to its key's node), so
 * Redis reads them together instead of one network round trip and one read per call. Each call stays one atomic
 * script call; a call that fails fails alone. A script Redis does not have cached yet ({@code NOSCRIPT}, after a
 * restart or {@code SCRIPT FLUSH}) is sent again with its source. Other connection factories run the calls one by
 * one.
 */
final class PipelinedScripts {

    /** Calls sent before their replies are awaited: bounds what one batch holds in the client's queue. */
    static final int WINDOW = 1_000;

    /** One script call. */
    record Call(RedisScript<Long> script, List<byte[]> keys, byte[][] args) {}

    private static final boolean LETTUCE = ClassUtils.isPresent(
            "io.lettuce.core.api.async.RedisScriptingAsyncCommands", PipelinedScripts.class.getClassLoader());

    private final RedisTemplate<byte[], byte[]> redis;
    /** Sends a window of calls on a Lettuce connection; null for other clients (Lettuce is an optional dependency). */
    private final Function<List<Call>, List<Object>> lettuce;

    PipelinedScripts(RedisTemplate<byte[], byte[]> redis, RedisConnectionFactory factory) {
        this.redis = redis;
        this.lettuce = LETTUCE ? LettuceWindows.of(redis, factory) : null;
    }

    /**
     * Each call's result, in order: its integer reply (null when Redis answered nil), or the exception it failed
     * with (as the template's single calls translate it).
     */
    List<Object> run(List<Call> calls) {
        List<Object> results = new ArrayList<>(calls.size());
        if (lettuce == null) {
            for (Call call : calls) {
                try {
                    results.add(redis.execute(call.script(), call.keys(), (Object[]) call.args()));
                } catch (RuntimeException e) {
                    results.add(e);
                }
            }
            return results;
        }
        for (int from = 0; from < calls.size(); from += WINDOW) {
            results.addAll(lettuce.apply(calls.subList(from, Math.min(calls.size(), from + WINDOW))));
        }
        return results;
    }

    /** The Lettuce part, in a class of its own so that it is loaded only when Lettuce is on the classpath. */
    private static final class LettuceWindows implements Function<List<Call>, List<Object>> {

        private final RedisTemplate<byte[], byte[]> redis;
        private final LettuceConnectionFactory factory;

        private LettuceWindows(RedisTemplate<byte[], byte[]> redis, LettuceConnectionFactory factory) {
            this.redis = redis;
            this.factory = factory;
        }

        static LettuceWindows of(RedisTemplate<byte[], byte[]> redis, RedisConnectionFactory factory) {
            return factory instanceof LettuceConnectionFactory l ? new LettuceWindows(redis, l) : null;
        }

        @Override
        public List<Object> apply(List<Call> window) {
            return redis.execute((RedisCallback<List<Object>>) connection -> {
                @SuppressWarnings("unchecked")
                RedisScriptingAsyncCommands<byte[], byte[]> async =
                        (RedisScriptingAsyncCommands<byte[], byte[]>) connection.getNativeConnection();
                return run(async, window);
            });
        }

        private List<Object> run(RedisScriptingAsyncCommands<byte[], byte[]> async, List<Call> window) {
            List<RedisFuture<Long>> sent = send(async, window, false);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(factory.getTimeout());
            List<Object> results = new ArrayList<>(window.size());
            List<Integer> again = new ArrayList<>();
            for (int i = 0; i < sent.size(); i++) {
                Object result = await(sent.get(i), deadline);
                if (result instanceof RedisNoScriptException) {
                    again.add(i);
                }
                results.add(result);
            }
            if (!again.isEmpty()) {
                // Redis lost its script cache (restart, SCRIPT FLUSH): the calls that met NOSCRIPT did nothing
                List<Call> calls = new ArrayList<>(again.size());
                for (int i : again) {
                    calls.add(window.get(i));
                }
                List<RedisFuture<Long>> resent = send(async, calls, true);
                deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(factory.getTimeout());
                for (int k = 0; k < again.size(); k++) {
                    results.set(again.get(k), await(resent.get(k), deadline));
                }
            }
            for (int i = 0; i < results.size(); i++) {
                if (results.get(i) instanceof RuntimeException e && !(e instanceof DataAccessException)) {
                    DataAccessException translated = factory.translateExceptionIfPossible(e);
                    results.set(i, translated != null ? translated : new RedisSystemException(e.getMessage(), e));
                }
            }
            return results;
        }

        /**
         * Sends the calls (EVALSHA, or EVAL with the source): in one write of the connection when it can be reached
         * (Lettuce's {@code dispatch} of a list; a cluster connection routes each call by its first key's slot),
         * else one async call each.
         */
        private static List<RedisFuture<Long>> send(
                RedisScriptingAsyncCommands<byte[], byte[]> async, List<Call> calls, boolean withSource) {
            StatefulConnection<byte[], byte[]> connection = null;
            if (async instanceof RedisAsyncCommands<byte[], byte[]> standalone) {
                connection = standalone.getStatefulConnection();
            } else if (async instanceof RedisAdvancedClusterAsyncCommands<byte[], byte[]> cluster) {
                connection = cluster.getStatefulConnection();
            }
            List<RedisFuture<Long>> futures = new ArrayList<>(calls.size());
            if (connection == null) {
                for (Call call : calls) {
                    futures.add(
                            withSource
                                    ? async.eval(
                                            call.script().getScriptAsString(),
                                            ScriptOutputType.INTEGER,
                                            keys(call),
                                            call.args())
                                    : async.evalsha(
                                            call.script().getSha1(),
                                            ScriptOutputType.INTEGER,
                                            keys(call),
                                            call.args()));
                }
                return futures;
            }
            List<AsyncCommand<byte[], byte[], Long>> commands = new ArrayList<>(calls.size());
            for (Call call : calls) {
                CommandArgs<byte[], byte[]> args = new CommandArgs<>(ByteArrayCodec.INSTANCE);
                if (withSource) {
                    args.add(call.script().getScriptAsString());
                } else {
                    args.add(call.script().getSha1());
                }
                args.add(call.keys().size());
                for (byte[] key : call.keys()) {
                    args.addKey(key);
                }
                for (byte[] value : call.args()) {
                    args.addValue(value);
                }
                AsyncCommand<byte[], byte[], Long> command = new AsyncCommand<>(new Command<>(
                        withSource ? CommandType.EVAL : CommandType.EVALSHA,
                        new IntegerOutput<>(ByteArrayCodec.INSTANCE),
                        args));
                commands.add(command);
                futures.add(command);
            }
            connection.dispatch(commands);
            return futures;
        }

        private static byte[][] keys(Call call) {
            return call.keys().toArray(new byte[0][]);
        }

        /** The reply, or the exception the call failed with (NOSCRIPT as Lettuce's, for the caller to resend). */
        private static Object await(RedisFuture<Long> future, long deadlineNanos) {
            CompletableFuture<Long> f = future.toCompletableFuture();
            try {
                return f.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                return cause instanceof RuntimeException r ? r : new RedisSystemException(String.valueOf(cause), cause);
            } catch (TimeoutException e) {
                return new QueryTimeoutException("Redis did not answer a script call of the batch within the "
                        + "connection's command timeout; it may or may not have run");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new RedisSystemException(
                        "interrupted while waiting for a script call of the batch; it may or may not have run", e);
            }
        }
    }
}
