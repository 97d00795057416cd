package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.function.Function;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.engine.MessageOptions;
import io.delayrelay.app.engine.amqp.EnvelopeCompression;
import io.delayrelay.app.engine.amqp.IntakeEnvelope;
import io.delayrelay.app.ops.DeadLetters.Entry;
import io.delayrelay.app.trigger.BusinessSpec;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * An operator's view of and hand on a business's scheduled entries: search by id or member prefix, payload
 * previews, cancel and deliver now. Each write is one Lua call per scanned shard (one slot each).
 */
public class ScheduledEntries {

    /** Characters of a payload preview; the console shows a preview, not whole messages. */
    static final int PREVIEW_CHARS = 240;

    /** Bytes of a payload read for a preview: enough for {@link #PREVIEW_CHARS} characters of UTF-8 and a mark. */
    static final int PREVIEW_BYTES = PREVIEW_CHARS * 4 + 4;

    /** Bytes of a compressed intake message read for a preview (whole: a cut one cannot be expanded). */
    private static final byte[] COMPRESSED_BYTES = DelayQueueKeys.bytes(Integer.toString(16_384));

    /** Entries a search reads per ZSCAN step. */
    private static final int SCAN_COUNT = 500;

    private static final RedisScript<Long> ENTRIES = LuaScripts.load("io/delayrelay/app/lua/entries.lua", Long.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> PREVIEWS = LuaScripts.load("io/delayrelay/app/lua/previews.lua", List.class);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> ZSCAN = LuaScripts.load("io/delayrelay/app/lua/zscan.lua", List.class);

    private final RedisTemplate<byte[], byte[]> redis;
    private final ColdEntries cold;
    private final EnvelopeCompression compression;

    public ScheduledEntries(RedisTemplate<byte[], byte[]> redis) {
        this(redis, null);
    }

    /** {@code compression} expands intake messages stored compressed for their previews (null: shown as such). */
    public ScheduledEntries(RedisTemplate<byte[], byte[]> redis, EnvelopeCompression compression) {
        this.redis = redis;
        this.compression = compression;
        this.cold = new ColdEntries(redis);
    }

    /** The business's cold entries (docs/cold-tier.md), listed beside the hot ones. */
    ColdEntries cold() {
        return cold;
    }

    /**
     * The {@code limit} earliest-due scheduled entries whose member starts with {@code prefix} (an id is its own
     * prefix), over shards 0..shards-1 (pass the scan width), earliest due first. ZSCAN visits entries in no order:
     * every shard is scanned, keeping only the {@code limit} earliest matches, until the budget's bound (then the
     * answer is partial).
     */
    public ShardMerge.Found<Entry> search(
            BusinessSpec spec, int shards, String prefix, int limit, ListingBudget budget) {
        byte[] pattern = DelayQueueKeys.bytes(globEscape(prefix) + "*");
        byte[] count = DelayQueueKeys.bytes(Integer.toString(SCAN_COUNT));
        Comparator<Entry> order = Comparator.comparingLong(Entry::dueAtMs).thenComparing(Entry::member);
        // the latest kept match on top: it is the one a better match replaces
        PriorityQueue<Entry> kept = new PriorityQueue<>(order.reversed());
        boolean partial = false;
        shards:
        for (int shard = 0; shard < shards; shard++) {
            List<byte[]> key = List.of(DelayQueueKeys.bytes(spec.keys().shard(shard)));
            byte[] cursor = DelayQueueKeys.bytes("0");
            do {
                if (!budget.left()) {
                    partial = true;
                    break shards;
                }
                List<?> step = redis.execute(ZSCAN, key, cursor, pattern, count);
                if (step == null || step.isEmpty()) {
                    break;
                }
                cursor = (byte[]) step.get(0);
                // a step's COUNT is a hint: the entries it visited are at least the ones it returned
                budget.read(Math.max(SCAN_COUNT, (step.size() - 1) / 2));
                for (int i = 1; i + 1 < step.size(); i += 2) {
                    Entry e =
                            Entry.of(shard, text((byte[]) step.get(i)), Double.valueOf(text((byte[]) step.get(i + 1))));
                    if (kept.size() < limit) {
                        kept.add(e);
                        budget.hold(e.member());
                    } else if (order.compare(e, kept.peek()) < 0) {
                        kept.poll();
                        kept.add(e);
                    }
                }
            } while (!text(cursor).equals("0"));
        }
        List<Entry> found = new ArrayList<>(kept);
        found.sort(order);
        return new ShardMerge.Found<>(found, partial);
    }

    /**
     * Removes the members from shards 0..shards-1, cold ones included (a member in flight is still delivered).
     * Returns how many.
     */
    public long cancel(BusinessSpec spec, int shards, Collection<String> members) {
        return onEveryShard(spec, shards, "cancel", members);
    }

    /**
     * Makes the members still scheduled in shards 0..shards-1 due now. A cold one is due now in its block, which the
     * cold mover brings back within one of its periods (at most 1 s). Returns how many.
     */
    public long deliverNow(BusinessSpec spec, int shards, Collection<String> members) {
        return onEveryShard(spec, shards, "now", members);
    }

    /**
     * Previews of the payloads stored under members (schedule by id), keyed by shard and member; members whose
     * message is the member itself have none.
     */
    public Map<String, String> previews(BusinessSpec spec, Map<Integer, List<String>> membersByShard) {
        Map<String, String> previews = new HashMap<>();
        byte[] maxBytes = DelayQueueKeys.bytes(Integer.toString(PREVIEW_BYTES));
        membersByShard.forEach((shard, members) -> {
            if (members.isEmpty()) {
                return;
            }
            List<Object> args = new ArrayList<>(members.size() + 2);
            args.add(maxBytes);
            args.add(COMPRESSED_BYTES);
            members.forEach(m -> args.add(DelayQueueKeys.bytes(m)));
            List<?> values = redis.execute(
                    PREVIEWS, List.of(DelayQueueKeys.bytes(spec.keys().payloads(shard))), args.toArray());
            for (int i = 0; values != null && i < Math.min(values.size(), members.size()); i++) {
                if (values.get(i) instanceof byte[] head) {
                    previews.put(previewKey(shard, members.get(i)), preview(expanded(spec, head)));
                }
            }
        });
        return previews;
    }

    /** A compressed intake envelope expanded; any other payload (or one that cannot be expanded) as it is. */
    private byte[] expanded(BusinessSpec spec, byte[] payload) {
        if (compression == null || !EnvelopeCompression.isCompressed(payload)) {
            return payload;
        }
        try {
            return compression.expand(spec.keys(), payload);
        } catch (IllegalArgumentException e) {
            return payload;
        }
    }

    /** Previews of the payloads stored under listed items' members, keyed by {@link #previewKey}. */
    <T> Map<String, String> previews(
            BusinessSpec spec, List<T> items, Function<T, Integer> shard, Function<T, String> member) {
        Map<Integer, List<String>> byShard = new LinkedHashMap<>();
        items.forEach(i ->
                byShard.computeIfAbsent(shard.apply(i), k -> new ArrayList<>()).add(member.apply(i)));
        return previews(spec, byShard);
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

    /**
     * The first {@link #PREVIEW_CHARS} characters of a payload read as UTF-8, marked when cut; a payload with
     * per-message options (contract v2) shows them first, then its message.
     */
    static String preview(byte[] payload) {
        if (IntakeEnvelope.isEnvelope(payload)) {
            IntakeEnvelope.Head head = IntakeEnvelope.head(payload);
            if (head != null) {
                return "[intake: to '" + head.exchange() + "', routing key '" + head.routingKey() + "'] "
                        + cut(text(head.bodyStart()));
            }
        }
        if (EnvelopeCompression.isCompressed(payload)) {
            return "[intake: stored compressed, " + payload.length + " bytes]";
        }
        if (MessageOptions.isEnvelope(payload)) {
            MessageOptions options = MessageOptions.read(payload);
            if (options.problem() == null) {
                return "[options: " + (options.expiresAtMs() >= 0 ? "expiry " + options.expiresAtMs() + ", " : "")
                        + "headers " + options.headers().keySet() + "] " + cut(text(options.message()));
            }
        }
        return cut(text(payload));
    }

    private static String cut(String text) {
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
