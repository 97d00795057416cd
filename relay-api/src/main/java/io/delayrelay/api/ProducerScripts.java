package io.delayrelay.api;

import java.util.List;

import io.delayrelay.api.internal.LuaScripts;
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

    private static RedisScript<Long> load(String file) {
        return LuaScripts.load(LOCATION + file, Long.class);
    }
}
