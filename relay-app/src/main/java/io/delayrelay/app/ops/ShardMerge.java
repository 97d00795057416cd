package io.delayrelay.app.ops;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.PriorityQueue;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The first {@code limit} items over all shards of a business, in score order, read a page at a time: each shard's
 * sorted set is read from its start in small pages, and a shard is read further only when its page was used up.
 * Reading {@code limit} from every shard and sorting (as before) held {@code limit x shards} members; this holds
 * about {@code shards x page + limit}, and a {@link ListingBudget} stops it earlier.
 */
final class ShardMerge {

    /** Fewest and most items read per page. */
    static final int MIN_PAGE = 10, MAX_PAGE = 100;

    private ShardMerge() {}

    /** Reads {@code count} items of a shard's sorted set from rank {@code from}, in score order. */
    interface PageReader<T> {
        List<T> read(int shard, long from, int count);
    }

    /** Items found, and whether a bound of the budget stopped the reading before the end. */
    record Found<T>(List<T> items, boolean partial) {}

    static <T> Found<T> first(
            int shards,
            int limit,
            PageReader<T> reader,
            Comparator<T> order,
            Predicate<T> keep,
            Function<T, String> text,
            ListingBudget budget) {
        long share = (2L * limit + shards - 1) / Math.max(1, shards);
        int page = (int) Math.max(1, Math.min(limit, Math.min(MAX_PAGE, Math.max(MIN_PAGE, share))));
        PriorityQueue<ShardCursor<T>> heads =
                new PriorityQueue<>(Comparator.comparing((ShardCursor<T> c) -> c.buffer.peekFirst(), order));
        List<T> found = new ArrayList<>(Math.min(limit, 1024));
        boolean more = false;
        for (int shard = 0; shard < shards; shard++) {
            if (!budget.left()) {
                return new Found<>(found, true);
            }
            ShardCursor<T> cursor = new ShardCursor<>(shard, page);
            if (cursor.fill(reader, budget, text)) {
                heads.add(cursor);
            }
        }
        while (found.size() < limit && !heads.isEmpty()) {
            ShardCursor<T> cursor = heads.poll();
            T item = cursor.buffer.pollFirst();
            if (keep.test(item)) {
                found.add(item);
            }
            if (!cursor.buffer.isEmpty()) {
                heads.add(cursor);
            } else if (cursor.full) {
                if (!budget.left()) {
                    more = true;
                    break;
                }
                if (cursor.fill(reader, budget, text)) {
                    heads.add(cursor);
                }
            }
        }
        return new Found<>(found, more || (found.size() < limit && budget.exhausted()));
    }

    /** One shard's unread part of its last page. */
    private static final class ShardCursor<T> {
        final int shard;
        final int page;
        final Deque<T> buffer = new ArrayDeque<>();
        long next;
        /** Whether the last page came back full: the shard may hold more. */
        boolean full;

        ShardCursor(int shard, int page) {
            this.shard = shard;
            this.page = page;
        }

        /** Reads the next page; false when it was empty. */
        boolean fill(PageReader<T> reader, ListingBudget budget, Function<T, String> text) {
            List<T> items = reader.read(shard, next, page);
            next += items.size();
            full = items.size() == page;
            budget.read(items.size());
            items.forEach(i -> budget.hold(text.apply(i)));
            buffer.addAll(items);
            return !buffer.isEmpty();
        }
    }
}
