package io.delayrelay.app.engine;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What one worker has popped and not yet settled: at most {@link #MAX_BATCHES} batches, {@link #BATCHES_OF_DATA}
 * batch-sizes of messages and as many batch-bytes, and which shards those batches came from. The worker waits for
 * room for a whole batch before it pops: a pop starts the entries' lease, which must not run out while it waits. So
 * a kill -9 redelivers at most {@code BATCHES_OF_DATA × batch-size} entries per worker.
 * <p>
 * The count has one owner, the settler: it charges a batch and releases it once settled. The worker only waits.
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
     * Waits until a whole batch fits (batch-size messages and batch-bytes more) and returns the room for it, to
     * charge once popped. Waiting for a whole batch keeps batches full while a backlog drains (a pop into the last
     * few free places would be a small batch with a full batch's cost). Only the worker thread acquires and charges,
     * so the room is still there when it charges; a reservation never charged holds nothing and needs no release.
     */
    Reservation acquire(int batchSize, long batchBytes) throws InterruptedException {
        long maxMessages = (long) batchSize * BATCHES_OF_DATA;
        long maxBytes = batchBytes * BATCHES_OF_DATA;
        lock.lockInterruptibly();
        try {
            while (batches >= MAX_BATCHES || messages + batchSize > maxMessages || bytes + batchBytes > maxBytes) {
                freed.await();
            }
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
     * Room for one batch. {@link #charge} counts what the batch holds; {@link #release} frees it (idempotent: a
     * second release does nothing, so a settle that races a failure cannot free the room twice).
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
                batches++;
                messages += n;
                bytes += size;
                for (int shard : shards) {
                    batchesPerShard.merge(shard, 1, Integer::sum);
                }
            } finally {
                lock.unlock();
            }
        }

        /** The batch is settled: its room is free again (a reservation never charged holds none). */
        void release() {
            lock.lock();
            try {
                if (released) {
                    return;
                }
                released = true;
                if (shards == null) {
                    return;
                }
                batches--;
                messages -= n;
                bytes -= size;
                for (int shard : shards) {
                    batchesPerShard.computeIfPresent(shard, (k, v) -> v > 1 ? v - 1 : null);
                }
                freed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }
}
