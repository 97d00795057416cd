package io.delayrelay.app.ops;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The merge of shard pages and the budget that bounds a listing, on in-memory shards with a settable clock. */
class ShardMergeTest {

    /** 256 shards of 10,000 scores each: shard s holds s, s + 256, s + 512, ... */
    private static final int SHARDS = 256, PER_SHARD = 10_000;

    @Test
    void readsAboutAPagePerShardPlusTheLimitNotTheLimitTimesTheShards() {
        AtomicLong read = new AtomicLong();
        ShardMerge.Found<Long> found = ShardMerge.first(
                SHARDS, 1_000, pages(read), Comparator.naturalOrder(), x -> true, String::valueOf, new ListingBudget());

        assertThat(found.items()).hasSize(1_000);
        assertThat(found.items()).isSorted().startsWith(0L, 1L, 2L).endsWith(999L);
        assertThat(found.partial()).isFalse();
        // before: limit x shards = 256,000 members read and held
        assertThat(read.get()).isLessThanOrEqualTo(SHARDS * ShardMerge.MIN_PAGE + 1_000 + SHARDS * ShardMerge.MIN_PAGE);
    }

    @Test
    void aFilterThatMatchesNothingStopsAtTheReadBoundAndSaysPartial() {
        AtomicLong read = new AtomicLong();
        ListingBudget budget = new ListingBudget(System::nanoTime, 5_000, Long.MAX_VALUE, Duration.ofMinutes(1));
        ShardMerge.Found<Long> found = ShardMerge.first(
                SHARDS, 10, pages(read), Comparator.naturalOrder(), x -> false, String::valueOf, budget);

        assertThat(found.items()).isEmpty();
        assertThat(found.partial()).isTrue();
        assertThat(read.get()).isLessThan(5_000 + 100);
    }

    @Test
    void aSlowRedisStopsTheListingAtTheTimeBound() {
        AtomicLong nanos = new AtomicLong();
        AtomicInteger calls = new AtomicInteger();
        ListingBudget budget = new ListingBudget(nanos::get, Integer.MAX_VALUE, Long.MAX_VALUE, Duration.ofSeconds(2));
        ShardMerge.PageReader<Long> slow = (shard, from, count) -> {
            calls.incrementAndGet();
            nanos.addAndGet(Duration.ofMillis(100).toNanos()); // each page takes 100 ms
            return page(shard, from, count);
        };
        ShardMerge.Found<Long> found =
                ShardMerge.first(SHARDS, 1_000, slow, Comparator.naturalOrder(), x -> true, String::valueOf, budget);

        assertThat(found.partial()).isTrue();
        assertThat(calls.get()).isEqualTo(21); // 20 pages fit in 2 s, the 21st crosses the bound
    }

    @Test
    void aBytesBoundStopsAListingOfHugeMembers() {
        ListingBudget budget = new ListingBudget(System::nanoTime, Integer.MAX_VALUE, 1_000_000, Duration.ofMinutes(1));
        String huge = "x".repeat(100_000);
        ShardMerge.Found<Long> found = ShardMerge.first(
                16, 1_000, pages(new AtomicLong()), Comparator.naturalOrder(), x -> true, x -> huge, budget);

        assertThat(found.partial()).isTrue();
        assertThat(found.items().size()).isLessThan(1_000);
    }

    private static ShardMerge.PageReader<Long> pages(AtomicLong read) {
        return (shard, from, count) -> {
            List<Long> page = page(shard, from, count);
            read.addAndGet(page.size());
            return page;
        };
    }

    private static List<Long> page(int shard, long from, int count) {
        List<Long> page = new ArrayList<>();
        for (long i = from; i < Math.min(PER_SHARD, from + count); i++) {
            page.add(shard + i * SHARDS);
        }
        return page;
    }
}
