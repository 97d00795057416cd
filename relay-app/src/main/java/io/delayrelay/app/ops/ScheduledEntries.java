package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.ops.DeadLetters.Entry;
import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.data.redis.connection.zset.Tuple;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.ScanOptions;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * An operator's view of and hand on a business's scheduled entries: search by id or member prefix, payload
 * previews, cancel and deliver now. Each write is one Lua call per scanned shard (one slot each).
 */
public class ScheduledEntries {

    /** Characters of a payload preview; the console shows a preview, not whole messages. */
    static final int PREVIEW_CHARS = 240;

    /** Entries a search reads per ZSCAN step. */
    private static final int SCAN_COUNT = 500;

    private static final RedisScript<Long> ENTRIES = LuaScripts.load("io/delayrelay/app/lua/entries.lua", Long.class);

    private final RedisTemplate<byte[], byte[]> redis;

    public ScheduledEntries(RedisTemplate<byte[], byte[]> redis) {
        this.redis = redis;
    }

    /**
     * Up to {@code limit} scheduled entries whose member starts with {@code prefix} (an id is its own prefix),
     * over shards 0..shards-1 (pass the scan width), earliest due first.
     */
    public List<Entry> search(BusinessSpec spec, int shards, String prefix, int limit) {
        byte[] pattern = DelayQueueKeys.bytes(globEscape(prefix) + "*");
        List<Entry> all = new ArrayList<>();
        for (int shard = 0; shard < shards; shard++) {
            int s = shard;
            byte[] key = DelayQueueKeys.bytes(spec.keys().shard(s));
            all.addAll(redis.execute((RedisCallback<List<Entry>>) c -> {
                List<Entry> found = new ArrayList<>();
                ScanOptions options = ScanOptions.scanOptions()
                        .match(pattern)
                        .count(SCAN_COUNT)
                        .build();
                try (Cursor<Tuple> cursor = c.zSetCommands().zScan(key, options)) {
                    while (cursor.hasNext() && found.size() < limit) {
                        Tuple t = cursor.next();
                        long due = t.getScore().longValue();
                        found.add(new Entry(s, text(t.getValue()), due, Instant.ofEpochMilli(due)));
                    }
                }
                return found;
            }));
        }
        all.sort(Comparator.comparingLong(Entry::dueAtMs).thenComparing(Entry::member));
        return all.size() > limit ? List.copyOf(all.subList(0, limit)) : all;
    }

    /** Removes the members from shards 0..shards-1 (a member in flight is still delivered). Returns how many. */
    public long cancel(BusinessSpec spec, int shards, Collection<String> members) {
        return onEveryShard(spec, shards, "cancel", members);
    }

    /** Makes the members still scheduled in shards 0..shards-1 due now. Returns how many. */
    public long deliverNow(BusinessSpec spec, int shards, Collection<String> members) {
        return onEveryShard(spec, shards, "now", members);
    }

    /**
     * Previews of the payloads stored under members (schedule by id), keyed by shard and member; members whose
     * message is the member itself have none.
     */
    public Map<String, String> previews(BusinessSpec spec, Map<Integer, List<String>> membersByShard) {
        Map<String, String> previews = new HashMap<>();
        membersByShard.forEach((shard, members) -> {
            if (members.isEmpty()) {
                return;
            }
            byte[][] fields = members.stream().map(DelayQueueKeys::bytes).toArray(byte[][]::new);
            List<byte[]> values = redis.execute((RedisCallback<List<byte[]>>)
                    c -> c.hashCommands().hMGet(DelayQueueKeys.bytes(spec.keys().payloads(shard)), fields));
            for (int i = 0; values != null && i < members.size(); i++) {
                if (values.get(i) != null) {
                    previews.put(previewKey(shard, members.get(i)), preview(values.get(i)));
                }
            }
        });
        return previews;
    }

    /** Key of {@link #previews}' map. */
    static String previewKey(int shard, String member) {
        return shard + ":" + member;
    }

    private long onEveryShard(BusinessSpec spec, int shards, String action, Collection<String> members) {
        if (members.isEmpty()) {
            return 0;
        }
        long total = 0;
        for (int shard = 0; shard < shards; shard++) {
            List<byte[]> keys = spec.keys()
                    .shardKeyBytes(
                            shard,
                            DelayQueueKeys.SHARD,
                            DelayQueueKeys.PAYLOADS,
                            DelayQueueKeys.INFLIGHT,
                            DelayQueueKeys.DEAD,
                            DelayQueueKeys.ATTEMPTS);
            List<byte[]> args = new ArrayList<>(members.size() + 3);
            args.add(DelayQueueKeys.bytes(action));
            args.add(DelayQueueKeys.bytes(spec.keys().wake()));
            args.add(DelayQueueKeys.bytes(Integer.toString(shard)));
            members.forEach(m -> args.add(DelayQueueKeys.bytes(m)));
            Long n = redis.execute(ENTRIES, keys, args.toArray());
            total += n == null ? 0 : n;
        }
        return total;
    }

    /** The first {@link #PREVIEW_CHARS} characters of a payload read as UTF-8, marked when cut. */
    static String preview(byte[] payload) {
        String text = text(payload);
        return text.length() <= PREVIEW_CHARS ? text : text.substring(0, PREVIEW_CHARS) + "…";
    }

    /** Escapes Redis glob characters so a prefix matches literally. */
    static String globEscape(String prefix) {
        StringBuilder out = new StringBuilder(prefix.length() + 4);
        for (char ch : prefix.toCharArray()) {
            if (ch == '*' || ch == '?' || ch == '[' || ch == ']' || ch == '\\') {
                out.append('\\');
            }
            out.append(ch);
        }
        return out.toString();
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
