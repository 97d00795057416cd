package io.delayrelay.app.engine;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The budget's reservations: room for a whole batch, released once, and which shards have a batch in flight. */
class InFlightBudgetTest {

    private final InFlightBudget budget = new InFlightBudget();

    @Test
    void aReservationReleasedTwiceFreesItsRoomOnce() throws Exception {
        InFlightBudget.Reservation first = budget.acquire(10, 1_000);
        first.charge(3, 10, 1_000);
        InFlightBudget.Reservation second = budget.acquire(10, 1_000);
        second.charge(4, 10, 1_000);
        InFlightBudget.Reservation third = budget.acquire(10, 1_000);
        third.charge(5, 10, 1_000);
        InFlightBudget.Reservation fourth = budget.acquire(10, 1_000);
        fourth.charge(6, 10, 1_000);

        first.release();
        first.release();
        InFlightBudget.Reservation fifth = budget.acquire(10, 1_000);
        fifth.charge(8, 10, 1_000);
        CompletableFuture<InFlightBudget.Reservation> sixth = CompletableFuture.supplyAsync(() -> {
            try {
                return budget.acquire(10, 1_000);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });

        assertThat(fifth).isNotNull();
        assertThat(sixth)
                .as("a second release of the same reservation must not make room for another batch")
                .isNotCompleted();
        Thread.sleep(100);
        assertThat(sixth).isNotCompleted();
        second.release();
        assertThat(sixth.get(5, TimeUnit.SECONDS)).isNotNull();
    }

    @Test
    void aShardIsInFlightFromTheChargeOfItsBatchUntilItsLastBatchIsReleased() throws Exception {
        InFlightBudget.Reservation a = budget.acquire(10, 1_000);
        assertThat(budget.inFlight(7)).isFalse();
        a.charge(7, 2, 20);
        InFlightBudget.Reservation b = budget.acquire(10, 1_000);
        b.charge(7, 1, 10);
        assertThat(budget.inFlight(7)).isTrue();

        a.release();
        assertThat(budget.inFlight(7)).isTrue();
        b.release();
        assertThat(budget.inFlight(7)).isFalse();
    }

    @Test
    void anUnchargedReservationReleasesOnlyItsBatchSlot() throws Exception {
        for (int i = 0; i < InFlightBudget.MAX_BATCHES * 2; i++) {
            budget.acquire(10, 1_000).release();
        }
        InFlightBudget.Reservation r = budget.acquire(10, 1_000);
        r.release();
        assertThatThrownBy(() -> r.charge(1, 1, 1)).isInstanceOf(IllegalStateException.class);
    }
}
