package io.delayrelay.app.engine.cold;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link ColdMover#inParallel}: the mover's pass over the shards, {@link ColdMover#THREADS} at a time. */
class ColdMoverPoolTest {

    private final ExecutorService pool = Executors.newFixedThreadPool(ColdMover.THREADS);

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    @Test
    void movesEveryShardOnceAtMostThreadsAtATimeAndReturnsWhenAllEnded() {
        Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        ColdMover.inParallel(pool, shards(16), shard -> {
            most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            busy(20);
            runs.computeIfAbsent(shard, s -> new AtomicInteger()).incrementAndGet();
            inFlight.decrementAndGet();
        });
        assertThat(runs).hasSize(16);
        assertThat(runs.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        assertThat(inFlight.get())
                .as("every move ended before inParallel returned")
                .isZero();
        assertThat(most.get()).isBetween(2, ColdMover.THREADS);
    }

    @Test
    void aFailedShardIsRethrownAfterTheOthersEnded() {
        AtomicInteger ended = new AtomicInteger();
        IllegalStateException failure = new IllegalStateException("shard 5 failed");
        assertThatThrownBy(() -> ColdMover.inParallel(pool, shards(16), shard -> {
                    if (shard == 5) {
                        throw failure;
                    }
                    busy(10);
                    ended.incrementAndGet();
                }))
                .isSameAs(failure);
        assertThat(ended.get()).isEqualTo(15);
    }

    @Test
    void anInterruptedPassInterruptsTheMovesAndReturnsWithTheFlagSet() throws Exception {
        CountDownLatch started = new CountDownLatch(ColdMover.THREADS);
        AtomicInteger interrupted = new AtomicInteger();
        AtomicBoolean flagSet = new AtomicBoolean();
        Thread mover = new Thread(() -> {
            ColdMover.inParallel(pool, shards(8), shard -> {
                started.countDown();
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    interrupted.incrementAndGet();
                }
            });
            flagSet.set(Thread.currentThread().isInterrupted());
        });
        mover.start();
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        mover.interrupt();
        mover.join(10_000);
        assertThat(mover.isAlive()).isFalse();
        assertThat(flagSet.get())
                .as("the mover's thread still sees its interrupt")
                .isTrue();
        pool.shutdown();
        assertThat(pool.awaitTermination(10, TimeUnit.SECONDS))
                .as("no move left sleeping")
                .isTrue();
        // the four running were interrupted; a queued one the pool took while the others were being cancelled is too
        assertThat(interrupted.get()).isBetween(ColdMover.THREADS, 8);
    }

    private static List<Integer> shards(int n) {
        List<Integer> shards = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            shards.add(i);
        }
        return shards;
    }

    private static void busy(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
