package io.delayrelay.app.engine.wake;

import java.util.BitSet;

/**
 * What a wake-up source may tell one business's workers, and the one thing it may ask them. The engine's
 * {@code BusinessRelay} implements it; the sources in this package (a producer's {@code K:wake} message, a keyspace
 * notification's peek) know nothing else of the engine, so the loop can change without touching them.
 */
public interface ShardWakeups {

    /** A due time meaning "nothing known": the shard is empty. */
    long NONE = Long.MAX_VALUE;

    /**
     * An entry of {@code shard} is due at {@code dueMs} (Redis time, epoch ms): the workers are woken when that is
     * earlier than what they knew.
     */
    void announce(int shard, long dueMs);

    /** Every shard is popped once now (e.g. after a (re)subscription, when notifications may have been lost). */
    void sweepAll();

    /**
     * Whether a peek at {@code shard} would be wasted: a worker pops it within {@code ms} anyway (its known due time is
     * that close, or past), or another instance of the fleet pops it.
     */
    boolean popsWithin(int shard, long ms);

    /**
     * The wake-up source stops hearing {@code shard} (its notifications cost more than polling it: it is written that
     * often) and the workers pop it at least every {@code everyMs} instead, whatever its pops report; 0: it is heard
     * again, and popped as its pops report.
     */
    void pollEvery(int shard, long everyMs);

    /**
     * The shards of the business's scan width this instance pops now (its share in the fleet's division): the keyspace
     * notifications of these, and only these, are heard, so the fleet's decode cost does not grow with its size.
     */
    BitSet ownedShards();
}
