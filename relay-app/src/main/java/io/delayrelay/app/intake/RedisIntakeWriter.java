package io.delayrelay.app.intake;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Function;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ScheduleRequest;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Writes intake messages to Redis through the producer contract (schedule.lua by id), and dead letters through
 * intake-dead.lua. Keys and limits come from the running business's spec.
 */
final class RedisIntakeWriter implements IntakeConsumer.Writer {

    private static final Logger log = LoggerFactory.getLogger(RedisIntakeWriter.class);

    private static final RedisScript<Long> DEAD = LuaScripts.load("io/delayrelay/app/lua/intake-dead.lua", Long.class);

    private final RedisDelayedMessageProducer producer;
    private final RedisTemplate<byte[], byte[]> redis;
    private final RedisClock clock;
    private final Function<String, BusinessSpec> specs;
    private final EnvelopeCompression compression;

    /**
     * @param specs the running spec of a business, or null when it does not run (default keys, no byte limit)
     */
    RedisIntakeWriter(
            RedisDelayedMessageProducer producer,
            RedisTemplate<byte[], byte[]> redis,
            RedisClock clock,
            Function<String, BusinessSpec> specs,
            EnvelopeCompression compression) {
        this.producer = producer;
        this.redis = redis;
        this.clock = clock;
        this.specs = specs;
        this.compression = compression;
    }

    /** The keys of a business: its spec's, or the default ones. */
    static DelayQueueKeys keysOf(Function<String, BusinessSpec> specs, String business) {
        BusinessSpec spec = specs.apply(business);
        return spec == null ? DelayQueueKeys.forBusiness(business) : spec.keys();
    }

    @Override
    public void scheduleAll(String business, List<ScheduleRequest> requests) {
        producer.scheduleAll(business, requests);
    }

    @Override
    public boolean dead(String business, String id, byte[] payload, String reason) {
        DelayQueueKeys keys = keysOf(specs, business);
        int shard = ShardSelector.shardOf(id, producer.shardCount(business));
        List<byte[]> keyList = List.of(
                bytes(keys.shard(shard)),
                bytes(keys.payloads(shard)),
                bytes(keys.inflight(shard)),
                bytes(keys.dead(shard)),
                bytes(keys.deadReasons(shard)));
        Long written = redis.execute(DEAD, keyList, bytes(id), payload, bytes(reason));
        return written != null && written == 1;
    }

    @Override
    public long nowMs() {
        return clock.nowMs();
    }

    @Override
    public long batchBytes(String business) {
        BusinessSpec spec = specs.apply(business);
        return spec == null ? -1 : spec.batch().bytes();
    }

    @Override
    public byte[] stored(String business, byte[] envelope) {
        try {
            return compression.compress(keysOf(specs, business), envelope);
        } catch (RuntimeException e) {
            // storing the dictionary failed: this message is stored as it is, the next one tries again
            log.warn(
                    "business={}: storing the intake dictionary failed, message stored uncompressed: {}",
                    business,
                    e.toString());
            return envelope;
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
