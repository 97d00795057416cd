package io.delayrelay.api;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.api.internal.TraceContext;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The producer side of the Redis contract: the Lua scripts of the top-level {@code contract/} folder (packaged into
 * this jar from there, one copy), which producers in other languages load too, and the KEYS they all take.
 */
final class ProducerScripts {

    /** Schedules by message or by id (payload as the optional 6th argument); see contract/schedule.lua. */
    static final RedisScript<Long> SCHEDULE = load("schedule.lua");
    /** Moves a scheduled entry; -1 when not scheduled in the shard; see contract/reschedule.lua. */
    static final RedisScript<Long> RESCHEDULE = load("reschedule.lua");
    /** Removes a scheduled entry; 1 or 0; see contract/cancel.lua. */
    static final RedisScript<Long> CANCEL = load("cancel.lua");

    /** Argument 2 of schedule.lua and reschedule.lua: argument 3 is an epoch ms due time. */
    static final byte[] AT = DelayQueueKeys.bytes("at");
    /** Argument 2 of schedule.lua and reschedule.lua: argument 3 is a delay added to Redis TIME. */
    static final byte[] AFTER = DelayQueueKeys.bytes("after");

    private static final String LOCATION = "io/delayrelay/api/lua/";

    private ProducerScripts() {}

    /** The KEYS every producer script takes, in the documented order: K:i, payloads, inflight, attempts, dead. */
    static List<byte[]> keys(DelayQueueKeys keys, int shard) {
        return keys.shardKeyBytes(
                shard,
                DelayQueueKeys.SHARD,
                DelayQueueKeys.PAYLOADS,
                DelayQueueKeys.INFLIGHT,
                DelayQueueKeys.ATTEMPTS,
                DelayQueueKeys.DEAD);
    }

    /** schedule.lua's ARGV[7..]: the expiry, then header name, value pairs (the current trace context added). */
    static byte[][] optionArguments(ScheduleOptions options) {
        Objects.requireNonNull(options, "options");
        Map<String, String> headers = new LinkedHashMap<>(options.headers());
        TraceContext.current().forEach(headers::putIfAbsent);
        byte[][] args = new byte[1 + 2 * headers.size()][];
        args[0] = bytes(options.expiryArgument());
        int i = 1;
        for (Map.Entry<String, String> h : headers.entrySet()) {
            args[i++] = bytes(h.getKey());
            args[i++] = bytes(h.getValue());
        }
        return args;
    }

    /** schedule.lua's ARGV (see contract/schedule.lua). */
    static byte[][] scheduleArguments(
            DelayQueueKeys keys, int shard, byte[] member, byte[] mode, long millis, byte[] payload, byte[][] options) {
        List<byte[]> args = new ArrayList<>(List.of(
                member, mode, bytes(Long.toString(millis)), bytes(keys.wake()), bytes(Integer.toString(shard))));
        if (payload != null) {
            args.add(payload);
            if (options != null) {
                args.addAll(List.of(options));
            }
        }
        return args.toArray(new byte[0][]);
    }

    private static byte[] bytes(String s) {
        return DelayQueueKeys.bytes(s);
    }

    private static RedisScript<Long> load(String file) {
        return LuaScripts.load(LOCATION + file, Long.class);
    }
}
