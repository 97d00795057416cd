package io.delayrelay.app.engine.amqp;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

import io.delayrelay.app.engine.PublishOutcome;

/**
 * The outcomes of one published batch as they arrive (confirms, returns, channel closes, the timeout), in batch
 * order. Each message's outcome is set once, whichever source comes first; the future completes when all are set.
 */
final class PendingBatch {

    private final AtomicReferenceArray<PublishOutcome> outcomes;
    private final AtomicInteger remaining;
    private final CompletableFuture<List<PublishOutcome>> done = new CompletableFuture<>();

    PendingBatch(int size) {
        this.outcomes = new AtomicReferenceArray<>(size);
        this.remaining = new AtomicInteger(size);
        if (size == 0) {
            done.complete(List.of());
        }
    }

    /** Sets message {@code index}'s outcome unless it already has one. */
    void complete(int index, PublishOutcome outcome) {
        if (outcomes.compareAndSet(index, null, outcome) && remaining.decrementAndGet() == 0) {
            PublishOutcome[] all = new PublishOutcome[outcomes.length()];
            Arrays.setAll(all, outcomes::get);
            done.complete(List.of(all));
        }
    }

    /** Gives every message still without an outcome this one (e.g. the confirm timeout). */
    void completeRest(PublishOutcome outcome) {
        for (int i = 0; i < outcomes.length(); i++) {
            complete(i, outcome);
        }
    }

    /** Whether message {@code index} has its outcome. */
    boolean has(int index) {
        return outcomes.get(index) != null;
    }

    boolean isDone() {
        return done.isDone();
    }

    CompletableFuture<List<PublishOutcome>> future() {
        return done;
    }
}
