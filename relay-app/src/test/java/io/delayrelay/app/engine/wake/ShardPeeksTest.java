package io.delayrelay.app.engine.wake;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * How notified writes become peeks at a shard's head: one peek in flight per shard, a burst of writes costs one
 * more peek after it (never none: a write may postdate the first read), a failed read means "look now". The head
 * reads are answered by the test (what Redis would answer is covered end to end by {@code KeyspaceWakeTest}).
 */
class ShardPeeksTest {

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final List<CompletableFuture<Long>> reads = new CopyOnWriteArrayList<>();
    private final List<long[]> found = new CopyOnWriteArrayList<>();
    private final Set<Integer> poppedSoon = ConcurrentHashMap.newKeySet();
    private final ShardPeeks peeks = new ShardPeeks(
            16,
            shard -> {
                CompletableFuture<Long> read = new CompletableFuture<>();
                reads.add(read);
                return read;
            },
            (shard, dueMs) -> found.add(new long[] {shard, dueMs}),
            poppedSoon::contains,
            timer,
            System::nanoTime);

    @AfterEach
    void stopTimer() {
        timer.shutdownNow();
    }

    @Test
    void aBurstOfWritesWhileAPeekIsInFlightCostsExactlyOneMorePeekAfterIt() {
        peeks.notified(3);
        for (int i = 0; i < 100; i++) {
            peeks.notified(3);
        }
        assertThat(reads).as("one peek in flight").hasSize(1);

        reads.get(0).complete(1_000L);
        await().atMost(Duration.ofSeconds(5)).until(() -> reads.size() == 2);
        reads.get(1).complete(900L);

        await().atMost(Duration.ofSeconds(5)).until(() -> found.size() == 2);
        assertThat(found).extracting(f -> f[0]).containsExactly(3L, 3L);
        assertThat(found).extracting(f -> f[1]).containsExactly(1_000L, 900L);
        peeks.notified(3);
        await().atMost(Duration.ofSeconds(5)).until(() -> reads.size() == 3);
        assertThat(reads).as("idle again: the next write is peeked at").hasSize(3);
    }

    @Test
    void anEmptyShardIsNotReportedAndAFailedReadMeansLookNow() {
        peeks.notified(1);
        reads.get(0).complete(ShardWakeups.NONE);
        peeks.notified(2);
        await().atMost(Duration.ofSeconds(5)).until(() -> reads.size() == 2);
        reads.get(1).completeExceptionally(new IllegalStateException("WRONGTYPE"));

        await().atMost(Duration.ofSeconds(5)).until(() -> found.size() == 1);
        assertThat(found.get(0)).containsExactly(2L, Long.MIN_VALUE);
    }

    @Test
    void aWriteToAShardThatIsPoppedWithinTheWindowAnywayIsNotPeekedAt() {
        poppedSoon.add(4);
        peeks.notified(4);
        peeks.notified(5);

        await().atMost(Duration.ofSeconds(5)).until(() -> reads.size() == 1);
        reads.get(0).complete(2_000L);
        await().atMost(Duration.ofSeconds(5)).until(() -> found.size() == 1);
        assertThat(found.get(0)).as("only shard 5 was read").containsExactly(5L, 2_000L);
        poppedSoon.clear();
        peeks.notified(4);
        await().atMost(Duration.ofSeconds(5)).until(() -> reads.size() == 2);
    }

    @Test
    void scoresBecomeWholeMillisecondsNeverEarlier() {
        assertThat(ShardPeeks.dueMs(1_700_000_000_000.0)).isEqualTo(1_700_000_000_000L);
        assertThat(ShardPeeks.dueMs(1_700_000_000_000.4)).isEqualTo(1_700_000_000_001L);
        assertThat(ShardPeeks.dueMs(Double.POSITIVE_INFINITY)).isEqualTo(ShardWakeups.NONE);
        assertThat(ShardPeeks.dueMs(Double.NEGATIVE_INFINITY)).isEqualTo(Long.MIN_VALUE);
        assertThat(ShardPeeks.dueMs(Double.NaN)).isEqualTo(Long.MIN_VALUE);
    }

    @Test
    void aNotificationChannelNamesItsShardOnlyWhenItIsOneOfTheBusinesssShardKeys() {
        byte[] prefix = "__keyspace@0__:dq:orders:".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        assertThat(KeyspaceSubscription.shardOf(bytes("__keyspace@0__:dq:orders:7"), prefix, 16))
                .isEqualTo(7);
        assertThat(KeyspaceSubscription.shardOf(bytes("__keyspace@0__:dq:orders:15"), prefix, 16))
                .isEqualTo(15);
        assertThat(KeyspaceSubscription.shardOf(bytes("__keyspace@0__:dq:orders:16"), prefix, 16))
                .isEqualTo(-1);
        assertThat(KeyspaceSubscription.shardOf(bytes("__keyspace@0__:dq:orders:"), prefix, 16))
                .isEqualTo(-1);
        assertThat(KeyspaceSubscription.shardOf(bytes("__keyspace@0__:dq:orders:1x"), prefix, 16))
                .isEqualTo(-1);
        assertThat(KeyspaceSubscription.shardOf(bytes("__keyspace@0__:dq:ordersX:1"), prefix, 16))
                .isEqualTo(-1);
        assertThat(KeyspaceSubscription.shardOf(bytes("__keyspace@0__:dq:orders:12345"), prefix, 99_999))
                .as("at most 4 digits (4,096 shards)")
                .isEqualTo(-1);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
