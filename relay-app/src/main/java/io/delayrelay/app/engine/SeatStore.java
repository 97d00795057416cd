package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.List;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.api.internal.LuaScripts;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * What the relay instances of a business share in Redis to work as one fleet: seats in the division of the shards
 * ({@code K:cursor} and its seats hash), rounds of shared chores ({@code K:round:*}), and retries told to the fleet.
 * The shard keys themselves are {@link ShardStore}'s.
 */
public class SeatStore {

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> SEAT = LuaScripts.load("io/delayrelay/app/lua/seat.lua", List.class);

    private static final byte[] ROUND_VALUE = {'1'};

    private final RedisTemplate<byte[], byte[]> redis;

    public SeatStore(RedisConnectionFactory connectionFactory) {
        this(ByteRedisTemplates.create(connectionFactory));
    }

    public SeatStore(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /**
     * A renewed seat in the fleet's division of a business's shards: {@code rank} (0-based) among {@code of} live
     * seats, {@code seat} the number drawn from {@code K:cursor}, {@code dropped} expired seats removed now,
     * {@code fleet} {@code K:cursor} after the renewal: it moves at every change of the live seats.
     */
    record Seat(long seat, int rank, int of, int dropped, long fleet) {}

    /**
     * Claims round {@code round} of a chore every relay instance shares (e.g. the idle workers' safety sweep) for
     * {@code periodMs}. True for the one instance that gets it ({@code SET K:round:<round> NX PX}): the chore's Redis
     * cost does not grow with the number of instances.
     */
    public boolean claimRound(DelayQueueKeys keys, String round, long periodMs) {
        Boolean claimed = redis.opsForValue()
                .setIfAbsent(
                        bytes(keys.sourceKey() + ":round:" + round),
                        ROUND_VALUE,
                        Duration.ofMillis(Math.max(1, periodMs)));
        return Boolean.TRUE.equals(claimed);
    }

    /**
     * Renews {@code holder}'s seat for {@code ttlMs} and drops expired seats ({@code seat.lua}, on {@code K:cursor}'s
     * slot). A holder without a seat, or whose seat expired, draws one with {@code INCR K:cursor}.
     */
    Seat takeSeat(DelayQueueKeys keys, String holder, long ttlMs) {
        List<?> reply = redis.execute(SEAT, seatKeys(keys), bytes(holder), num(ttlMs), bytes("renew"));
        return new Seat(
                asLong(reply.get(2)),
                (int) asLong(reply.get(0)),
                (int) asLong(reply.get(1)),
                (int) asLong(reply.get(4)),
                asLong(reply.get(5)));
    }

    /**
     * Gives {@code holder}'s seat up: the other instances divide the shards without it at their next renewal.
     * Returns {@code K:cursor} as it was before the leave (compared with the last renewal's {@link Seat#fleet()}: did
     * the seats change since?).
     */
    long leaveSeat(DelayQueueKeys keys, String holder) {
        List<?> reply = redis.execute(SEAT, seatKeys(keys), bytes(holder), num(0), bytes("leave"));
        return asLong(reply.get(5));
    }

    /**
     * Tells the fleet on {@code K:wake} that {@code shard} holds an entry due at {@code dueMs} ({@code <shard>:<ms>},
     * as producers do). A retry put back for a shard this instance no longer pops reaches its current owner.
     */
    void announceToFleet(DelayQueueKeys keys, int shard, long dueMs) {
        redis.execute((RedisCallback<Long>) c -> c.publish(bytes(keys.wake()), bytes(shard + ":" + dueMs)));
    }

    private static List<byte[]> seatKeys(DelayQueueKeys keys) {
        return List.of(bytes(keys.cursor()), bytes(keys.seats()));
    }

    private static long asLong(Object value) {
        return ((Number) value).longValue();
    }

    private static byte[] num(long value) {
        return bytes(Long.toString(value));
    }
}
