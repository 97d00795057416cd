package io.delayrelay.app.engine;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What one worker has popped and not yet settled: at most {@link #MAX_BATCHES} batches, {@link #BATCHES_OF_DATA}
 * batch-sizes of messages and {@link #BATCHES_OF_DATA} batch-bytes of members and payloads. The worker reserves
 * room for a whole batch before it pops (a pop starts the entries' lease, which must not run out while the worker
 * waits), so the bounds hold exactly: a kill -9 redelivers at most
 * {@code BATCHES_OF_DATA × batch-size} entries per worker.
 * <p>
 * Bounding data rather than batches lets many small batches be in flight while the broker's confirms are slow
 * (steady traffic pops a few entries at a time): the worker keeps popping and publishing instead of waiting one
 * confirm latency for a slot. Only the worker thread acquires; settle threads release.
 */
final class InFlightBudget {

    /** Batches one worker may have awaiting confirms at a time. */
    static final int MAX_BATCHES = 64;
    /** Messages (bytes) one worker may have in flight, in batch-sizes (batch-bytes). */
    static final int BATCHES_OF_DATA = 4;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition freed = lock.newCondition();
    private int batches;
    private long messages;
    private long bytes;

    /**
     * Waits until a whole batch fits (batch-size messages and batch-bytes more), and reserves it. Waiting for room for a whole batch, not popping into what is left, keeps batches full
     * while a backlog drains (a pop into the last few free places would be a small batch with a full batch's cost).
     */
    void acquire(int batchSize, long batchBytes) throws InterruptedException {
        long maxMessages = (long) batchSize * BATCHES_OF_DATA;
        long maxBytes = batchBytes * BATCHES_OF_DATA;
        lock.lockInterruptibly();
        try {
            while (batches >= MAX_BATCHES || messages + batchSize > maxMessages || bytes + batchBytes > maxBytes) {
                freed.await();
            }
            batches++;
        } finally {
            lock.unlock();
        }
    }

    /** The reserved batch holds {@code n} messages of {@code size} bytes (counted until {@link #release}). */
    void charge(int n, long size) {
        lock.lock();
        try {
            messages += n;
            bytes += size;
        } finally {
            lock.unlock();
        }
    }

    /** A reserved batch is settled (or was never filled: {@code n} and {@code size} 0). */
    void release(int n, long size) {
        lock.lock();
        try {
            batches--;
            messages -= n;
            bytes -= size;
            freed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
