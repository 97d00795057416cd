package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The exact bounds of {@link InFlightBudget}: a batch fits while it keeps the worker within 64 batches, four
 * batch-sizes of messages and four batch-bytes of data, and waits (parked) as soon as it would not; shard 0 is a shard
 * like any other. Complements {@link InFlightBudgetTest}.
 */
class InFlightBudgetBoundsTest {

    private final InFlightBudget budget = new InFlightBudget();

    @Test
    void sixtyFourBatchesFitHoweverSmallAndTheNextWaitsForARelease() throws Exception {
        InFlightBudget.Reservation first = null;
        for (int i = 0; i < InFlightBudget.MAX_BATCHES; i++) {
            InFlightBudget.Reservation r = budget.acquire(1_000, 1_000_000);
            r.charge(i, 1, 1);
            first = first == null ? r : first;
        }

        Acquisition next = acquiring(1_000, 1_000_000);
        next.assertWaiting();
        first.release();
        assertThat(next.get()).isNotNull();
    }

    @Test
    void batchesFitUpToExactlyFourBatchSizesOfMessages() throws Exception {
        InFlightBudget.Reservation a = charged(10, 1_000_000, 1, 10, 1);
        charged(10, 1_000_000, 2, 10, 1);
        charged(10, 1_000_000, 3, 10, 1);
        Acquisition fourth = acquiring(10, 1_000_000);
        InFlightBudget.Reservation d = fourth.get();
        d.charge(4, 9, 1);

        Acquisition fifth = acquiring(10, 1_000_000);
        fifth.assertWaiting();
        a.release();
        assertThat(fifth.get()).as("29 messages in flight: 10 more fit in 40").isNotNull();
    }

    @Test
    void batchesFitUpToExactlyFourBatchBytesOfData() throws Exception {
        InFlightBudget.Reservation a = charged(1_000, 100, 1, 1, 100);
        charged(1_000, 100, 2, 1, 100);
        charged(1_000, 100, 3, 1, 100);
        Acquisition fourth = acquiring(1_000, 100);
        fourth.get().charge(4, 1, 99);

        Acquisition fifth = acquiring(1_000, 100);
        fifth.assertWaiting();
        a.release();
        assertThat(fifth.get()).as("299 bytes in flight: 100 more fit in 400").isNotNull();
    }

    @Test
    void shardZeroIsInFlightFromItsChargeToItsReleaseAndIsChargedOnce() throws Exception {
        InFlightBudget.Reservation r = budget.acquire(10, 1_000);
        r.charge(0, 5, 50);

        assertThat(budget.inFlight(0)).isTrue();
        assertThatThrownBy(() -> r.charge(0, 5, 50)).isInstanceOf(IllegalStateException.class);
        InFlightBudget.Reservation other = budget.acquire(10, 1_000);
        other.charge(3, 1, 1);
        assertThatThrownBy(() -> other.charge(3, 1, 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("a reservation is charged once, before it is released");
        r.release();
        assertThat(budget.inFlight(0)).isFalse();
        assertThat(budget.inFlight(3)).isTrue();
    }

    private InFlightBudget.Reservation charged(int batchSize, long batchBytes, int shard, int n, long size)
            throws InterruptedException {
        InFlightBudget.Reservation r = budget.acquire(batchSize, batchBytes);
        r.charge(shard, n, size);
        return r;
    }

    private Acquisition acquiring(int batchSize, long batchBytes) {
        FutureTask<InFlightBudget.Reservation> task = new FutureTask<>(() -> budget.acquire(batchSize, batchBytes));
        Thread thread = new Thread(task, "acquire");
        thread.setDaemon(true);
        thread.start();
        return new Acquisition(task, thread);
    }

    /** An acquire running on its own thread, as the worker's would. */
    private record Acquisition(FutureTask<InFlightBudget.Reservation> task, Thread thread) {

        /** It is parked waiting for room (not finished). */
        void assertWaiting() {
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> thread.getState() == Thread.State.WAITING || task.isDone());
            assertThat(task.isDone())
                    .as("the batch does not fit: the acquire waits")
                    .isFalse();
        }

        InFlightBudget.Reservation get() throws Exception {
            return task.get(5, TimeUnit.SECONDS);
        }
    }
}
