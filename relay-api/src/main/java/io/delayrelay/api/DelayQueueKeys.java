package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every Redis key of the delay-relay contract, built in one place.
 *
 * <p>For a business with source key {@code K} and shard {@code i}:
 * <pre>
 *   K:i              zset   member = message (or id), score = due epoch ms
 *   {K:i}:payloads   hash   id -> message, for entries scheduled by id
 *   {K:i}:inflight   zset   popped, not yet confirmed; score = lease deadline
 *   {K:i}:attempts   hash   member -> failed delivery attempts
 *   {K:i}:dead       zset   dead letters; score = time of death
 *   {K:i}:dead-reasons hash member -> why it died
 *   K:meta           hash   shards, draining (shard counts still drained), paused (operator pause)
 *   K:cursor         string INCR counter: a relay instance draws its seat in the fleet's division of the shards
 *   {K:cursor}:seats hash   relay instance -> "seat:deadline ms": the live seats, in INCR order, divide the shards
 *   K:instances      hash   relay instance id -> heartbeat (host, version, started-at, last-seen)
 *   K:backlog        string backlog figures one relay instance sampled for the fleet (expires)
 *   {K:i}:cold       zset   cold tier: block id -> earliest due of its entries (docs/cold-tier.md)
 *   {K:i}:cold-blocks hash  block id -> compressed block
 *   {K:i}:cold-meta  hash   fan ("2:<member index fan-out>": index rule 2), seq (last block id)
 *   {K:i}:cold-ix:n  hash   member (or its digest) -> block id[:rescheduled due]
 *   {K:i}:cold-drop  hash   member indexed by digest -> 1: cancelled or scheduled again while cold
 *   {K:i}:cold-moved hash   member indexed by digest -> due ms: rescheduled while cold
 *   {K:0}:schedules  zset   recurring schedules of the business: name -> when a relay next tends it (relay-owned)
 *   {K:0}:schedule-state hash the business's recurring schedules' state, field "<name>:<field>": cursor, pending
 *                            slot, counts, and a runtime schedule's definition (relay-owned; docs/schedules.md)
 *   K:wake           channel "shard:due" published when a new earliest entry is added; "meta" when K:meta's
 *                            operator pause changed
 * </pre>
 * {@code K:i} and {@code {K:i}:...} hash to the same Redis Cluster slot, so every script touches one slot.
 */
public final class DelayQueueKeys {

    /** Prefix of the default source key: {@code delayqueue:<business>}. */
    public static final String DEFAULT_PREFIX = "delayqueue:";

    private final String sourceKey;
    private final Map<Integer, byte[][]> shardKeyCache = new ConcurrentHashMap<>();

    private DelayQueueKeys(String sourceKey) {
        this.sourceKey = sourceKey;
    }

    /** Keys for an explicit source key {@code K}. */
    public static DelayQueueKeys of(String sourceKey) {
        return new DelayQueueKeys(validateName("source key", sourceKey));
    }

    /** Keys for a business with the default source key {@code delayqueue:<business>}. */
    public static DelayQueueKeys forBusiness(String business) {
        return of(DEFAULT_PREFIX + validateName("business name", business));
    }

    /**
     * Checks that a name can be used in the key contract: not blank, no '{' or '}' (they would change
     * the Redis Cluster hash slot of the derived keys).
     *
     * @return the name
     * @throws IllegalArgumentException naming what and the bad value
     */
    public static String validateName(String what, String name) {
        Objects.requireNonNull(what, "what");
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException(what + " must not be empty, was '" + name + "'");
        }
        if (name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
            throw new IllegalArgumentException(
                    what + " must not contain '{' or '}' (they decide the Redis Cluster slot), was '" + name + "'");
        }
        return name;
    }

    public String sourceKey() {
        return sourceKey;
    }

    /** {@code K:i}: the shard's zset of scheduled entries. */
    public String shard(int shard) {
        return sourceKey + ":" + checkShard(shard);
    }

    /** {@code {K:i}:payloads}. */
    public String payloads(int shard) {
        return tagged(shard, "payloads");
    }

    /** {@code {K:i}:inflight}. */
    public String inflight(int shard) {
        return tagged(shard, "inflight");
    }

    /** {@code {K:i}:attempts}. */
    public String attempts(int shard) {
        return tagged(shard, "attempts");
    }

    /** {@code {K:i}:dead}. */
    public String dead(int shard) {
        return tagged(shard, "dead");
    }

    /** {@code {K:i}:dead-reasons}. */
    public String deadReasons(int shard) {
        return tagged(shard, "dead-reasons");
    }

    /**
     * {@code {K:i}:cold}: the shard's cold blocks (zset: block id, score = earliest due time of its live entries),
     * relay-owned; see docs/cold-tier.md.
     */
    public String cold(int shard) {
        return tagged(shard, "cold");
    }

    /** {@code {K:i}:cold-blocks}: block id to compressed block (hash, relay-owned). */
    public String coldBlocks(int shard) {
        return tagged(shard, "cold-blocks");
    }

    /**
     * {@code {K:i}:cold-meta}: {@code fan} = {@code 2:<n>}, the index rule and the member index's fan-out n (a tier
     * started by an older relay has just {@code <n>}), {@code seq} = the last block id (hash, relay-owned). The contract
     * scripts read {@code fan}: without it nothing of the shard is cold.
     */
    public String coldMeta(int shard) {
        return tagged(shard, "cold-meta");
    }

    /**
     * {@code {K:i}:cold-ix:<n>}: part {@code n} of the cold member index (hash member to block id, or
     * {@code <block id>:<due ms>} after a reschedule); n = the first 24 bits of the member's SHA-1 modulo the fan-out.
     * The scripts build these names from the shard's other keys (same slot).
     */
    public String coldIndex(int shard, int part) {
        return tagged(shard, "cold-ix:" + part);
    }

    /**
     * {@code {K:i}:cold-drop}: members indexed by digest (over 32 bytes) cancelled or scheduled again while cold (hash
     * member to {@code 1}); the relay drops their cold copy when it brings the block back.
     */
    public String coldDrop(int shard) {
        return tagged(shard, "cold-drop");
    }

    /**
     * {@code {K:i}:cold-moved}: members indexed by digest rescheduled while cold (hash member to due ms); the relay
     * brings their cold copy back at that time.
     */
    public String coldMoved(int shard) {
        return tagged(shard, "cold-moved");
    }

    /** {@code K:meta}. */
    public String meta() {
        return sourceKey + ":meta";
    }

    /**
     * {@code K:cursor}: the INCR counter from which each relay instance draws its seat in the fleet's division of the
     * shards (relay-owned; producers never touch it).
     */
    public String cursor() {
        return sourceKey + ":cursor";
    }

    /**
     * {@code {K:cursor}:seats}: the relay instances' seats (holder to "seat:deadline ms"), in {@code K:cursor}'s
     * Redis Cluster slot. The live seats, in INCR order, divide the shards among the instances (relay-owned).
     */
    public String seats() {
        return "{" + cursor() + "}:seats";
    }

    /** {@code K:instances}: heartbeats of the relay instances running the business. */
    public String instances() {
        return sourceKey + ":instances";
    }

    /**
     * {@code K:backlog}: the business's backlog figures as last sampled by one relay instance for all of them
     * (relay-owned, expires by itself).
     */
    public String backlog() {
        return sourceKey + ":backlog";
    }

    /**
     * {@code K:rate}: the token bucket of the business's fleet-wide {@code max-rate} (a hash: {@code tokens} and
     * {@code at}, the Redis time of the last charge in microseconds); relay-owned, expires by itself.
     */
    public String rate() {
        return sourceKey + ":rate";
    }

    /**
     * {@code {K:0}:schedules}: the business's recurring schedules (zset: name, score = when a relay instance next tends
     * it), in shard 0's slot, where their slot entries go (relay-owned; docs/schedules.md).
     */
    public String schedules() {
        return tagged(0, "schedules");
    }

    /**
     * {@code {K:0}:schedule-state}: the state of the business's recurring schedules (hash, relay-owned), in shard 0's
     * slot, one field {@code <name>:<field>} per schedule and field: its cursor (every slot up to it is decided), its
     * pending slot entry, its counts, and its definition when created at runtime. One hash for all schedules, so a
     * batch of tends reads and writes them with one command each.
     */
    public String scheduleState() {
        return tagged(0, "schedule-state");
    }

    /**
     * {@code K:dicts}: the zstd dictionaries an AMQP intake stores its messages with (hash: 8-hex-digit id to
     * dictionary, {@code current} to the id new messages use; relay-owned, never changed once written).
     */
    public String dictionaries() {
        return sourceKey + ":dicts";
    }

    /** {@code K:wake}: pub/sub channel. */
    public String wake() {
        return sourceKey + ":wake";
    }

    /** Index of {@code K:i} in {@link #shardKeyBytes}. */
    public static final int SHARD = 0;
    /** Index of {@code {K:i}:payloads} in {@link #shardKeyBytes}. */
    public static final int PAYLOADS = 1;
    /** Index of {@code {K:i}:inflight} in {@link #shardKeyBytes}. */
    public static final int INFLIGHT = 2;
    /** Index of {@code {K:i}:attempts} in {@link #shardKeyBytes}. */
    public static final int ATTEMPTS = 3;
    /** Index of {@code {K:i}:dead} in {@link #shardKeyBytes}. */
    public static final int DEAD = 4;
    /** Index of {@code {K:i}:dead-reasons} in {@link #shardKeyBytes}. */
    public static final int DEAD_REASONS = 5;

    /**
     * A shard's keys as UTF-8 bytes, built once and cached (the scripts run thousands of times a second): indexed
     * by {@link #SHARD}, {@link #PAYLOADS}, {@link #INFLIGHT}, {@link #ATTEMPTS}, {@link #DEAD},
     * {@link #DEAD_REASONS}. Shared arrays: do not modify them.
     */
    public byte[][] shardKeyBytes(int shard) {
        return shardKeyCache.computeIfAbsent(checkShard(shard), i -> new byte[][] {
            bytes(shard(i)),
            bytes(payloads(i)),
            bytes(inflight(i)),
            bytes(attempts(i)),
            bytes(dead(i)),
            bytes(deadReasons(i))
        });
    }

    /** The listed keys of a shard (indexes as in {@link #shardKeyBytes}), in that order. */
    public List<byte[]> shardKeyBytes(int shard, int... which) {
        byte[][] all = shardKeyBytes(shard);
        byte[][] picked = new byte[which.length][];
        for (int i = 0; i < which.length; i++) {
            picked[i] = all[which[i]];
        }
        return List.of(picked);
    }

    public static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private String tagged(int shard, String suffix) {
        return "{" + shard(shard) + "}:" + suffix;
    }

    private static int checkShard(int shard) {
        if (shard < 0) {
            throw new IllegalArgumentException("shard must be >= 0, was " + shard);
        }
        return shard;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DelayQueueKeys other && other.sourceKey.equals(sourceKey);
    }

    @Override
    public int hashCode() {
        return sourceKey.hashCode();
    }

    @Override
    public String toString() {
        return "DelayQueueKeys[" + sourceKey + "]";
    }
}
