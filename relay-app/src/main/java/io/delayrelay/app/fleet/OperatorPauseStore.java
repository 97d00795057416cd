package io.delayrelay.app.fleet;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * Reads and writes the operator's pause of a business in {@code K:meta} (fields {@link MetaFields#PAUSED},
 * {@link MetaFields#PAUSED_BY}, {@link MetaFields#PAUSED_AT}). Times are Redis time, so instances agree. Every
 * write is followed by {@link MetaFields#CHANGED_NOTICE} on {@code K:wake}, so every instance reads it at once.
 */
public class OperatorPauseStore {

    private static final byte[] PAUSED = bytes(MetaFields.PAUSED);
    private static final byte[] PAUSED_BY = bytes(MetaFields.PAUSED_BY);
    private static final byte[] PAUSED_AT = bytes(MetaFields.PAUSED_AT);
    private static final byte[] YES = bytes("1");
    private static final byte[] CHANGED = bytes(MetaFields.CHANGED_NOTICE);

    private final RedisTemplate<byte[], byte[]> redis;

    public OperatorPauseStore(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /** The operator pause of the business with these keys (one HMGET). */
    public OperatorPause read(DelayQueueKeys keys) {
        List<byte[]> values = redis.execute((RedisCallback<List<byte[]>>)
                c -> c.hashCommands().hMGet(bytes(keys.meta()), PAUSED, PAUSED_BY, PAUSED_AT));
        if (values == null || values.get(0) == null || !"1".equals(text(values.get(0)))) {
            return OperatorPause.NONE;
        }
        String at = text(values.get(2));
        return new OperatorPause(
                true, text(values.get(1)), at == null || !at.matches("[0-9]{1,19}") ? null : Long.parseLong(at));
    }

    /** Pauses the business for every instance; returns the stored pause. */
    public OperatorPause pause(DelayQueueKeys keys, String by) {
        long now = redisNowMs();
        redis.execute((RedisCallback<Object>) c -> {
            c.hashCommands()
                    .hMSet(
                            bytes(keys.meta()),
                            Map.of(PAUSED, YES, PAUSED_BY, bytes(by), PAUSED_AT, bytes(Long.toString(now))));
            return null;
        });
        announce(keys);
        return new OperatorPause(true, by, now);
    }

    /** Lifts the operator's pause (configuration may still pause the business). */
    public void resume(DelayQueueKeys keys) {
        redis.execute(
                (RedisCallback<Object>) c -> c.hashCommands().hDel(bytes(keys.meta()), PAUSED, PAUSED_BY, PAUSED_AT));
        announce(keys);
    }

    /** Tells every instance (this one too) to read K:meta again: the pause is stored, the notice only hurries. */
    private void announce(DelayQueueKeys keys) {
        redis.execute((RedisCallback<Long>) c -> c.publish(bytes(keys.wake()), CHANGED));
    }

    /** Redis TIME in epoch ms. */
    long redisNowMs() {
        Long now = redis.execute((RedisCallback<Long>) c -> c.serverCommands().time());
        return now == null ? System.currentTimeMillis() : now;
    }

    private static String text(byte[] value) {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }
}
