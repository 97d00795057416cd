package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.support.PeriodicTask;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Keeps every business's dead set bounded (like Sidekiq's dead set): every interval it removes dead letters older
 * than the business's {@code dead-max-age}, then the oldest ones past its {@code dead-max-size}, with their payloads
 * when nothing else refers to them. The age bound is a time-of-death cutoff; the size bound names exactly the
 * excess, the oldest by (time of death, shard, id), because a batch dies in one millisecond and a cutoff would take
 * the whole batch. Both are picked the same way on every replica, so replicas trimming at the same time remove the
 * same entries, not twice as many. Counted by {@value RelayMeterNames#DEAD_TRIMMED}.
 */
public class DeadSetTrimmer extends PeriodicTask {

    private static final Logger log = LoggerFactory.getLogger(DeadSetTrimmer.class);

    /** Dead letters removed per script call, and the most the size bound trims per step. */
    static final int STEP = 1000;
    /** Size steps per business per run: a huge backlog is worked off over several runs, not in one long one. */
    static final int MAX_SIZE_STEPS = 100;

    /** trim-dead.lua's mode that removes the ids given. */
    private static final byte[] MEMBERS = DelayQueueKeys.bytes("members");

    private static final RedisScript<Long> TRIM = LuaScripts.load("io/delayrelay/app/lua/trim-dead.lua", Long.class);

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static final RedisScript<List<Object>> DEAD_OLDEST =
            (RedisScript) LuaScripts.load("io/delayrelay/app/lua/dead-oldest.lua", List.class);

    private final RelayEngine engine;
    private final RedisTemplate<byte[], byte[]> redis;
    private final RelayEvents events;

    public DeadSetTrimmer(
            RelayEngine engine, RedisTemplate<byte[], byte[]> redis, RelayEvents events, Duration interval) {
        super("relay-dead-trimmer", "dead set trim", Duration.ofMillis(Math.max(1, interval.toMillis())));
        this.engine = engine;
        this.redis = redis;
        this.events = events;
    }

    /** What one trim removed. */
    public record Trimmed(long tooOld, long overSize) {}

    @Override
    protected void runOnce() {
        trimAll();
    }

    /** Trims every business once; a failing business is logged and skipped. */
    public void trimAll() {
        for (BusinessRelay relay : engine.relays().values()) {
            BusinessSpec spec = relay.spec();
            try {
                trim(spec, scanWidth(relay));
            } catch (RuntimeException e) {
                log.warn("business={}: trimming the dead set failed: {}", spec.name(), e.toString());
            }
        }
    }

    /**
     * Trims one business's dead sets over shards 0..shards-1 to its bounds ({@code dead-max-size},
     * {@code dead-max-age} of the spec in force: a reload applies from the next trim, a rejected one changes nothing).
     */
    public Trimmed trim(BusinessSpec spec, int shards) {
        long now = redisNowMs();
        long tooOld = removeDiedBy(spec, shards, now - spec.deadSet().maxAge().toMillis());
        long overSize = 0;
        for (int step = 0; step < MAX_SIZE_STEPS; step++) {
            List<DeadLetter> oldest = overCap(spec, shards, spec.deadSet().maxSize());
            if (oldest.isEmpty()) {
                break;
            }
            long removed = remove(spec, oldest);
            overSize += removed;
            if (removed == 0) {
                break;
            }
        }
        report(
                spec,
                RelayMeterNames.BOUND_MAX_AGE,
                tooOld,
                "older than " + spec.deadSet().maxAge());
        report(
                spec,
                RelayMeterNames.BOUND_MAX_SIZE,
                overSize,
                "over the cap of " + spec.deadSet().maxSize());
        return new Trimmed(tooOld, overSize);
    }

    private void report(BusinessSpec spec, String bound, long count, String why) {
        if (count == 0) {
            return;
        }
        log.info("business={}: {} dead letter(s) trimmed ({})", spec.name(), count, why);
        try {
            events.deadTrimmed(spec, bound, count);
        } catch (RuntimeException e) {
            log.debug("business={}: recording trimmed dead letters failed", spec.name(), e);
        }
    }

    /** Removes the dead letters that died at or before {@code cutoffMs} from every shard. */
    private long removeDiedBy(BusinessSpec spec, int shards, long cutoffMs) {
        byte[] cutoff = DelayQueueKeys.bytes(Long.toString(cutoffMs));
        byte[] step = DelayQueueKeys.bytes(Integer.toString(STEP));
        long total = 0;
        for (int shard = 0; shard < shards; shard++) {
            List<byte[]> keys = trimKeys(spec, shard);
            long n;
            do {
                Long removed = redis.execute(TRIM, keys, cutoff, step);
                n = removed == null ? 0 : removed;
                total += n;
            } while (n == STEP);
        }
        return total;
    }

    /** A dead letter: where it is, and when it died. Ordered by time of death, then shard, then id. */
    private record DeadLetter(long diedAtMs, int shard, byte[] member) implements Comparable<DeadLetter> {
        @Override
        public int compareTo(DeadLetter o) {
            int c = Long.compare(diedAtMs, o.diedAtMs);
            if (c == 0) {
                c = Integer.compare(shard, o.shard);
            }
            return c != 0 ? c : Arrays.compareUnsigned(member, o.member);
        }
    }

    /**
     * The dead letters over the cap, oldest first (at most {@link #STEP} of them), or none when the dead sets are
     * within it. Exactly the excess, by (time of death, shard, id): letters that died in the same millisecond (a
     * batch) beyond it are kept. Each shard's size and oldest entries are read together: then, while another
     * replica trims, what this one sees is still "the oldest entries are gone", and the letters it picks are among
     * the other's.
     */
    private List<DeadLetter> overCap(BusinessSpec spec, int shards, int maxSize) {
        long total = 0;
        List<DeadLetter> oldest = new ArrayList<>();
        byte[] step = DelayQueueKeys.bytes(Integer.toString(STEP));
        for (int shard = 0; shard < shards; shard++) {
            List<Object> read = redis.execute(
                    DEAD_OLDEST, List.of(DelayQueueKeys.bytes(spec.keys().dead(shard))), step);
            if (read == null || read.isEmpty()) {
                continue;
            }
            total += (Long) read.get(0);
            for (int i = 1; i + 1 < read.size(); i += 2) {
                long diedAt = (long) Double.parseDouble(new String((byte[]) read.get(i + 1), StandardCharsets.UTF_8));
                oldest.add(new DeadLetter(diedAt, shard, (byte[]) read.get(i)));
            }
        }
        long excess = total - maxSize;
        if (excess <= 0 || oldest.isEmpty()) {
            return List.of();
        }
        Collections.sort(oldest);
        return oldest.subList(0, (int) Math.min(Math.min(excess, STEP), oldest.size()));
    }

    /** Removes exactly these dead letters (those still dead), shard by shard; returns how many went. */
    private long remove(BusinessSpec spec, List<DeadLetter> letters) {
        Map<Integer, List<byte[]>> byShard = new TreeMap<>();
        for (DeadLetter letter : letters) {
            byShard.computeIfAbsent(letter.shard(), s -> new ArrayList<>()).add(letter.member());
        }
        long total = 0;
        for (Map.Entry<Integer, List<byte[]>> shard : byShard.entrySet()) {
            Object[] args = new Object[1 + shard.getValue().size()];
            args[0] = MEMBERS;
            for (int i = 0; i < shard.getValue().size(); i++) {
                args[1 + i] = shard.getValue().get(i);
            }
            Long removed = redis.execute(TRIM, trimKeys(spec, shard.getKey()), args);
            total += removed == null ? 0 : removed;
        }
        return total;
    }

    private static List<byte[]> trimKeys(BusinessSpec spec, int shard) {
        return spec.keys()
                .shardKeyBytes(
                        shard,
                        DelayQueueKeys.SHARD,
                        DelayQueueKeys.PAYLOADS,
                        DelayQueueKeys.INFLIGHT,
                        DelayQueueKeys.DEAD,
                        DelayQueueKeys.DEAD_REASONS);
    }

    private long redisNowMs() {
        Long now = redis.execute((RedisCallback<Long>) c -> c.serverCommands().time());
        if (now == null) {
            throw new IllegalStateException("Redis TIME returned nothing");
        }
        return now;
    }

    /** Shards the relay scans: its shard count, more while retired shards drain. */
    private static int scanWidth(BusinessRelay relay) {
        return relay.state().scanWidth();
    }
}
