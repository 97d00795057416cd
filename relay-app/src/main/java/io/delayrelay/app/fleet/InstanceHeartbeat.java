package io.delayrelay.app.fleet;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.support.PeriodicTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * Each instance's heartbeat in {@code K:instances} of every business it runs (field = instance id, value = host,
 * version, started-at, last-seen), every {@code interval}. An instance is live while its last heartbeat is at most
 * {@value #LIVE_BEATS} intervals old; heartbeats older than {@value #FORGET_BEATS} intervals are deleted by any
 * instance's heartbeat (it looks for them every {@value #FORGET_EVERY} beats), and an instance deletes its own at
 * shutdown.
 */
public class InstanceHeartbeat extends PeriodicTask {

    private static final Logger log = LoggerFactory.getLogger(InstanceHeartbeat.class);
    /** Missed heartbeats after which an instance is no longer listed as live. */
    static final int LIVE_BEATS = 3;
    /** Missed heartbeats after which its entry is deleted. */
    static final int FORGET_BEATS = 20;
    /** Beats between two looks for long-gone instances to delete. */
    static final int FORGET_EVERY = 10;

    private final RelayEngine engine;
    private final RedisTemplate<byte[], byte[]> redis;
    private final RelayInstance self;
    private final Duration interval;
    private volatile boolean failing;
    private long beats;

    public InstanceHeartbeat(
            RelayEngine engine, RedisTemplate<byte[], byte[]> redis, RelayInstance self, Duration interval) {
        super("relay-heartbeat", "instance heartbeat", Duration.ZERO, interval);
        this.engine = engine;
        this.redis = redis;
        this.self = self;
        this.interval = interval;
    }

    /** This instance. */
    public RelayInstance self() {
        return self;
    }

    @Override
    protected void runOnce() {
        beat();
    }

    /**
     * Writes this instance's heartbeat for every business (one {@code TIME} for all of them, one {@code HSET} each)
     * and, every {@value #FORGET_EVERY} beats, forgets long-gone instances ({@code HGETALL}, and {@code HDEL} when
     * there are any): an idle fleet's heartbeat costs one command per business per interval and instance.
     */
    public void beat() {
        long now;
        try {
            now = redisNowMs();
        } catch (RuntimeException e) {
            failed("*", "Redis TIME", e);
            return;
        }
        boolean forget = beats++ % FORGET_EVERY == 0;
        for (BusinessRelay relay : engine.relays().values()) {
            DelayQueueKeys keys = relay.spec().keys();
            try {
                redis.execute((RedisCallback<Object>) c -> c.hashCommands()
                        .hSet(
                                bytes(keys.instances()),
                                bytes(self.id()),
                                bytes(self.seenAt(now)
                                        .withSeat(relay.seatSummary())
                                        .encode())));
                if (forget) {
                    forgetGone(keys, now);
                }
                if (failing) {
                    failing = false;
                    log.info("instance heartbeat written again");
                }
            } catch (RuntimeException e) {
                failed(relay.spec().name(), keys.instances(), e);
            }
        }
    }

    private void forgetGone(DelayQueueKeys keys, long now) {
        List<byte[]> gone = new ArrayList<>();
        read(keys).forEach(i -> {
            if (i.lastSeen() < now - interval.toMillis() * FORGET_BEATS) {
                gone.add(bytes(i.id()));
            }
        });
        if (!gone.isEmpty()) {
            redis.execute((RedisCallback<Object>)
                    c -> c.hashCommands().hDel(bytes(keys.instances()), gone.toArray(new byte[0][])));
        }
    }

    private void failed(String business, String what, RuntimeException e) {
        if (!failing) {
            failing = true;
            log.warn(
                    "business={}: writing the instance heartbeat to {} failed ({}); retrying every {}",
                    business,
                    what,
                    Exceptions.rootMessage(e),
                    interval);
        }
    }

    /** The live instances of a business (latest heartbeat at most {@value #LIVE_BEATS} intervals old), by id. */
    public List<RelayInstance> live(DelayQueueKeys keys) {
        long since = redisNowMs() - interval.toMillis() * LIVE_BEATS;
        return read(keys).stream()
                .filter(i -> i.lastSeen() >= since)
                .sorted(Comparator.comparing(RelayInstance::id))
                .toList();
    }

    private List<RelayInstance> read(DelayQueueKeys keys) {
        Map<byte[], byte[]> all = redis.execute(
                (RedisCallback<Map<byte[], byte[]>>) c -> c.hashCommands().hGetAll(bytes(keys.instances())));
        List<RelayInstance> instances = new ArrayList<>();
        if (all != null) {
            all.forEach((id, value) -> {
                RelayInstance instance = RelayInstance.decode(text(id), text(value));
                if (instance != null) {
                    instances.add(instance);
                }
            });
        }
        return instances;
    }

    private long redisNowMs() {
        Long now = redis.execute((RedisCallback<Long>) c -> c.serverCommands().time());
        return now == null ? System.currentTimeMillis() : now;
    }

    /** Once beating stopped: removes this instance from every business's list. */
    @Override
    protected void afterStop() {
        for (BusinessRelay relay : engine.relays().values()) {
            String key = relay.spec().keys().instances();
            try {
                redis.execute((RedisCallback<Object>) c -> c.hashCommands().hDel(bytes(key), bytes(self.id())));
            } catch (RuntimeException e) {
                log.debug("removing the heartbeat from {} failed", key, e);
            }
        }
    }

    /** After the engine: listed while it relays. */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 900;
    }

    private static String text(byte[] value) {
        return new String(value, StandardCharsets.UTF_8);
    }
}
