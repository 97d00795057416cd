package io.delayrelay.app.engine;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What one worker has popped and not yet settled: at most {@link #MAX_BATCHES} batches, {@link #BATCHES_OF_DATA}
 * batch-sizes of messages and {@link #BATCHES_OF_DATA} batch-bytes of members and payloads, and which shards those
 * batches came from. The worker reserves room for a whole batch before it pops (a pop starts the entries' lease,
 * which must not run out while the worker waits), so the bounds hold exactly: a kill -9 redelivers at most
 * {@code BATCHES_OF_DATA × batch-size} entries per worker.
 * <p>
 * Bounding data rather than batches lets many small batches be in flight while the broker's confirms are slow
 * (steady traffic pops a few entries at a time): the worker keeps popping and publishing instead of waiting one
 * confirm latency for a slot. Only the worker thread acquires; whoever holds a {@link Reservation} releases it,
 * once: the worker when the pop brought nothing to publish, the settler when the batch is settled.
 */
final class InFlightBudget {

    /** Batches one worker may have awaiting confirms at a time. */
    static final int MAX_BATCHES = 64;
    /** Messages (bytes) one worker may have in flight, in batch-sizes (batch-bytes). */
    static final int BATCHES_OF_DATA = 4;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition freed = lock.newCondition();
    private final Map<Integer, Integer> batchesPerShard = new ConcurrentHashMap<>();
    private int batches;
    private long messages;
    private long bytes;

    /**
     * Waits until a whole batch fits (batch-size messages and batch-bytes more), and reserves it. Waiting for room for
     * a whole batch, not popping into what is left, keeps batches full while a backlog drains (a pop into the last
     * few free places would be a small batch with a full batch's cost).
     */
    Reservation acquire(int batchSize, long batchBytes) throws InterruptedException {
        long maxMessages = (long) batchSize * BATCHES_OF_DATA;
        long maxBytes = batchBytes * BATCHES_OF_DATA;
        lock.lockInterruptibly();
        try {
            while (batches >= MAX_BATCHES || messages + batchSize > maxMessages || bytes + batchBytes > maxBytes) {
                freed.await();
            }
            batches++;
            return new Reservation();
        } finally {
            lock.unlock();
        }
    }

    /** Whether a batch of {@code shard} is in flight (charged and not yet released). */
    boolean inFlight(int shard) {
        return batchesPerShard.containsKey(shard);
    }

    /**
     * Room for one batch. {@link #charge} says what the batch holds; {@link #release} frees it (idempotent: a second
     * release does nothing, so a settle that races a failure cannot free the room twice).
     */
    final class Reservation {

        private int[] shards;
        private int n;
        private long size;
        private boolean released;

        private Reservation() {}

        /** The batch popped from {@code shard} holds {@code n} messages of {@code size} bytes in all. */
        void charge(int shard, int n, long size) {
            charge(new int[] {shard}, n, size);
        }

        /** The batch popped from {@code shards} (one pop of several shards) holds {@code n} messages, {@code size} bytes. */
        void charge(int[] shards, int n, long size) {
            lock.lock();
            try {
                if (released || this.shards != null) {
                    throw new IllegalStateException("a reservation is charged once, before it is released");
                }
                this.shards = shards.clone();
                this.n = n;
                this.size = size;
                messages += n;
                bytes += size;
                for (int shard : shards) {
                    batchesPerShard.merge(shard, 1, Integer::sum);
                }
            } finally {
                lock.unlock();
            }
        }

        /** The batch is settled, or never was filled: its room is free again. */
        void release() {
            lock.lock();
            try {
                if (released) {
                    return;
                }
                released = true;
                batches--;
                messages -= n;
                bytes -= size;
                if (shards != null) {
                    for (int shard : shards) {
                        batchesPerShard.computeIfPresent(shard, (k, v) -> v > 1 ? v - 1 : null);
                    }
                }
                freed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }
}
