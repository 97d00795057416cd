package io.delayrelay.app.engine.amqp;

import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.support.DaemonThreads;

/**
 * The publish timeouts of the batches awaiting confirms: every {@link #SWEEP_MS} while any batch is awaiting, one
 * timer thread fails with {@code CONFIRM_TIMEOUT} what a batch past its deadline still awaits, and forgets the
 * batches that have all their outcomes. A timeout fires up to {@link #SWEEP_MS} after it is due. (One timer task per
 * batch, scheduled and cancelled, woke the timer thread for almost every batch: a confirm usually comes within
 * milliseconds, so each new task was the queue's first.) Nothing runs while no batch is awaiting. A publish timeout
 * shorter than the sweep's period gets a task of its own at its deadline.
 */
final class ConfirmDeadlines implements AutoCloseable {

    /** How often the awaiting batches are looked at. */
    static final long SWEEP_MS = 50;

    private record Awaiting(PendingBatch pending, long deadlineNanos, PublishChannel channel) {}

    /** Not CompletableFuture.delayedExecutor: below 3 cores its default executor starts a thread per task. */
    private final ScheduledThreadPoolExecutor timer =
            new ScheduledThreadPoolExecutor(1, DaemonThreads.named("relay-confirm-timeouts"));

    private final ConcurrentLinkedQueue<Awaiting> awaiting = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean sweeping = new AtomicBoolean();

    /** Watches {@code pending}, published on {@code channel}, until its outcomes are in or its timeout passes. */
    void watch(PendingBatch pending, long timeoutMs, PublishChannel channel) {
        if (timeoutMs < SWEEP_MS) {
            // shorter than the sweep's period: a task of its own, at its deadline
            try {
                timer.schedule(() -> expire(pending, channel), timeoutMs, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                // closed: the channels close and settle what they hold
            }
            return;
        }
        awaiting.add(new Awaiting(pending, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs), channel));
        if (sweeping.compareAndSet(false, true)) {
            schedule();
        }
    }

    private void schedule() {
        try {
            timer.schedule(this::sweep, SWEEP_MS, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // closed: the channels close and settle what they hold
            sweeping.set(false);
        }
    }

    private void sweep() {
        long now = System.nanoTime();
        for (Iterator<Awaiting> it = awaiting.iterator(); it.hasNext(); ) {
            Awaiting batch = it.next();
            if (batch.pending().isDone()) {
                it.remove();
            } else if (now - batch.deadlineNanos() >= 0) {
                it.remove();
                expire(batch.pending(), batch.channel());
            }
        }
        if (!awaiting.isEmpty()) {
            schedule();
            return;
        }
        sweeping.set(false);
        // a batch watched between the emptiness check and the flag's reset found the flag still set
        if (!awaiting.isEmpty() && sweeping.compareAndSet(false, true)) {
            schedule();
        }
    }

    /** Fails with {@code CONFIRM_TIMEOUT} what {@code pending} still awaits. */
    private static void expire(PendingBatch pending, PublishChannel channel) {
        if (pending.isDone()) {
            return;
        }
        pending.completeRest(PublishOutcome.failed(PublishOutcome.Cause.CONFIRM_TIMEOUT, "confirm timeout"));
        if (channel != null) {
            channel.forget(pending);
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
