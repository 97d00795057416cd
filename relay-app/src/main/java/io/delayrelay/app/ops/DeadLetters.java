package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.data.redis.connection.zset.Tuple;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import static io.delayrelay.api.DelayQueueKeys.bytes;

/**
 * Reads and repairs a business's dead sets and peeks at its shards. Replay and purge are Lua scripts that touch one
 * slot each; members are handled as UTF-8 text.
 */
public class DeadLetters {

    /** Most dead letters replayed or purged per script call. */
    static final int CHUNK = 500;

    /** How requeue.lua records attempts in a dead letter's reason. */
    private static final Pattern ATTEMPTS = Pattern.compile("\\(attempts: (\\d+)\\)");

    /** How requeue.lua records the original due time (epoch ms) in a dead letter's reason. */
    private static final Pattern ORIGINAL_DUE = Pattern.compile("\\(due: (-?[0-9.eE+]+)\\)");

    private static final RedisScript<Long> DEAD_LETTERS =
            LuaScripts.load("io/delayrelay/app/lua/dead-letters.lua", Long.class);

    private final RedisTemplate<byte[], byte[]> redis;

    public DeadLetters(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /** A dead letter: where it is, what it is, why and when it died. */
    public record DeadLetter(int shard, String member, String reason, long deadAtMs, Instant deadAt) {}

    /** A scheduled entry: where it is, what it is and when it falls due. */
    public record Entry(int shard, String member, long dueAtMs, Instant dueAt) {
        /**
         * An entry read with its score. A score is epoch ms by contract, but a foreign producer may write seconds
         * or nanoseconds: any score is shown as it is (every long of ms fits an Instant), never a failure.
         */
        static Entry of(int shard, String member, Double score) {
            long due = score == null || score.isNaN() ? 0 : score.longValue();
            return new Entry(shard, member, due, Instant.ofEpochMilli(due));
        }
    }

    /** The oldest {@code limit} dead letters over shards 0..shards-1 (pass the scan width), oldest first. */
    public List<DeadLetter> list(BusinessSpec spec, int shards, int limit) {
        return list(spec, shards, limit, null, new ListingBudget()).items();
    }

    /**
     * The oldest {@code limit} dead letters over shards 0..shards-1 whose reason contains {@code reasonFilter}
     * (case-insensitive; null: every reason), oldest first, read within the budget.
     */
    public ShardMerge.Found<DeadLetter> list(
            BusinessSpec spec, int shards, int limit, String reasonFilter, ListingBudget budget) {
        String filter = reasonFilter == null || reasonFilter.isBlank() ? null : reasonFilter.toLowerCase(Locale.ROOT);
        return ShardMerge.first(
                shards,
                limit,
                (shard, from, count) -> page(spec.keys(), shard, from, count),
                Comparator.comparingLong(DeadLetter::deadAtMs).thenComparing(DeadLetter::member),
                d -> filter == null
                        || (d.reason() != null
                                && d.reason().toLowerCase(Locale.ROOT).contains(filter)),
                d -> d.member() + (d.reason() == null ? "" : d.reason()),
                budget);
    }

    private List<DeadLetter> page(DelayQueueKeys keys, int s, long from, int count) {
        return redis.execute((RedisCallback<List<DeadLetter>>) c -> {
            Set<Tuple> tuples = c.zSetCommands().zRangeWithScores(bytes(keys.dead(s)), from, from + count - 1);
            List<DeadLetter> out = new ArrayList<>();
            if (tuples == null || tuples.isEmpty()) {
                return out;
            }
            List<Tuple> list = new ArrayList<>(tuples);
            byte[][] members = list.stream().map(Tuple::getValue).toArray(byte[][]::new);
            List<byte[]> reasons = c.hashCommands().hMGet(bytes(keys.deadReasons(s)), members);
            for (int i = 0; i < list.size(); i++) {
                long at = list.get(i).getScore().longValue();
                byte[] reason = reasons == null ? null : reasons.get(i);
                out.add(new DeadLetter(
                        s, text(members[i]), reason == null ? null : text(reason), at, Instant.ofEpochMilli(at)));
            }
            return out;
        });
    }

    /** Failed delivery attempts recorded in a dead letter's reason ("... (attempts: N)"), or null. */
    public static Integer attempts(String reason) {
        if (reason == null) {
            return null;
        }
        Matcher m = ATTEMPTS.matcher(reason);
        return m.find() ? Integer.valueOf(m.group(1)) : null;
    }

    /**
     * When a dead letter was originally due (epoch ms), from its reason ("... (due: 1764000000000) (attempts: N)"),
     * or null for a dead letter written by a relay that did not record it.
     */
    public static Long originalDueMs(String reason) {
        if (reason == null) {
            return null;
        }
        Matcher m = ORIGINAL_DUE.matcher(reason);
        if (!m.find()) {
            return null;
        }
        try {
            return (long) Double.parseDouble(m.group(1));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** The next {@code limit} entries to fall due over shards 0..shards-1 (pass the scan width), earliest first. */
    public ShardMerge.Found<Entry> peek(BusinessSpec spec, int shards, int limit, ListingBudget budget) {
        DelayQueueKeys keys = spec.keys();
        return ShardMerge.first(
                shards,
                limit,
                (shard, from, count) -> {
                    Set<Tuple> tuples = redis.execute((RedisCallback<Set<Tuple>>)
                            c -> c.zSetCommands().zRangeWithScores(bytes(keys.shard(shard)), from, from + count - 1));
                    List<Entry> page = new ArrayList<>();
                    if (tuples != null) {
                        tuples.forEach(t -> page.add(Entry.of(shard, text(t.getValue()), t.getScore())));
                    }
                    return page;
                },
                Comparator.comparingLong(Entry::dueAtMs).thenComparing(Entry::member),
                e -> true,
                Entry::member,
                budget);
    }

    /**
     * Replays one dead letter (any of shards 0..shards-1), or every dead letter when {@code member} is null, as a new
     * delivery due now. A dead letter whose member has an unsettled delivery (in flight or waiting for a retry) stays
     * dead (replay it once that settled). Returns how many were replayed.
     */
    public long replay(BusinessSpec spec, int shards, String member) {
        return forEachShard(spec, shards, member, "replay");
    }

    /** Purges one dead letter (any of shards 0..shards-1), or every dead letter when {@code member} is null. Returns how many. */
    public long purge(BusinessSpec spec, int shards, String member) {
        return forEachShard(spec, shards, member, "purge");
    }

    /** Replays the listed dead letters (any of shards 0..shards-1). Returns how many were dead. */
    public long replay(BusinessSpec spec, int shards, Collection<String> members) {
        return members(spec, 0, shards, members, "replay");
    }

    /** Purges the listed dead letters (any of shards 0..shards-1). Returns how many were dead. */
    public long purge(BusinessSpec spec, int shards, Collection<String> members) {
        return members(spec, 0, shards, members, "purge");
    }

    /** Replays ({@code replay}) or purges the dead letters a write selected. Returns how many. */
    public long act(BusinessSpec spec, int shards, WriteSelection selection, boolean replay) {
        if (selection.all()) {
            return replay ? replay(spec, shards, (String) null) : purge(spec, shards, (String) null);
        }
        if (selection.limit() != null) {
            return replay
                    ? replayOldest(spec, shards, selection.limit())
                    : purgeOldest(spec, shards, selection.limit());
        }
        return replay ? replay(spec, shards, selection.members()) : purge(spec, shards, selection.members());
    }

    /** Replays the oldest {@code limit} dead letters over shards 0..shards-1. Returns how many. */
    public long replayOldest(BusinessSpec spec, int shards, int limit) {
        return listed(spec, list(spec, shards, limit), "replay");
    }

    /** Purges the oldest {@code limit} dead letters over shards 0..shards-1. Returns how many. */
    public long purgeOldest(BusinessSpec spec, int shards, int limit) {
        return listed(spec, list(spec, shards, limit), "purge");
    }

    /**
     * Acts on exactly the listed letters, each in its own shard: after a reshard one member can be dead in two shards,
     * and the oldest N name only the copies they listed.
     */
    private long listed(BusinessSpec spec, List<DeadLetter> letters, String action) {
        Map<Integer, List<String>> byShard = new TreeMap<>();
        letters.forEach(
                d -> byShard.computeIfAbsent(d.shard(), s -> new ArrayList<>()).add(d.member()));
        long total = 0;
        for (Map.Entry<Integer, List<String>> e : byShard.entrySet()) {
            total += members(spec, e.getKey(), e.getKey() + 1, e.getValue(), action);
        }
        return total;
    }

    /** The keys dead-letters.lua works on, in its KEYS order. */
    private static List<byte[]> scriptKeys(BusinessSpec spec, int shard) {
        return spec.keys()
                .shardKeyBytes(
                        shard,
                        DelayQueueKeys.SHARD,
                        DelayQueueKeys.PAYLOADS,
                        DelayQueueKeys.INFLIGHT,
                        DelayQueueKeys.DEAD,
                        DelayQueueKeys.DEAD_REASONS,
                        DelayQueueKeys.ATTEMPTS);
    }

    /** Acts on the named members in shards from..to-1. */
    private long members(BusinessSpec spec, int from, int to, Collection<String> members, String action) {
        if (members.isEmpty()) {
            return 0;
        }
        long total = 0;
        for (int shard = from; shard < to; shard++) {
            List<byte[]> shardKeys = scriptKeys(spec, shard);
            List<byte[]> args = new ArrayList<>(members.size() + 2);
            args.add(bytes(action));
            args.add(bytes("members"));
            members.forEach(m -> args.add(bytes(m)));
            total += announced(spec, shard, action, orZero(redis.execute(DEAD_LETTERS, shardKeys, args.toArray())));
        }
        return total;
    }

    /**
     * Replayed letters wait in {@code {K:i}:inflight}, due now, where no keyspace notification announces them: a
     * wake-up on {@code K:wake} ({@code "<shard>:0"}, due since long ago) has every relay instance look at the shard.
     */
    private long announced(BusinessSpec spec, int shard, String action, long done) {
        if (done > 0 && action.equals("replay")) {
            redis.convertAndSend(spec.keys().wake(), bytes(shard + ":0"));
        }
        return done;
    }

    private long forEachShard(BusinessSpec spec, int shards, String member, String action) {
        long total = 0;
        for (int shard = 0; shard < shards; shard++) {
            List<byte[]> shardKeys = scriptKeys(spec, shard);
            if (member != null) {
                total += announced(
                        spec,
                        shard,
                        action,
                        orZero(redis.execute(DEAD_LETTERS, shardKeys, bytes(action), bytes("members"), bytes(member))));
                continue;
            }
            long n;
            do {
                n = announced(
                        spec,
                        shard,
                        action,
                        orZero(redis.execute(
                                DEAD_LETTERS,
                                shardKeys,
                                bytes(action),
                                bytes("oldest"),
                                bytes(Integer.toString(CHUNK)))));
                total += n;
            } while (n >= CHUNK);
        }
        return total;
    }

    private static long orZero(Long n) {
        return n == null ? 0 : n;
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
