package io.delayrelay.app.engine;

import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;

/**
 * How a worker pops: every due shard together after a linger ({@link LingeredRounds}), or one shard at a time
 * ({@link ShardAtATime}). The worker picks one when the spec or the store changes, not on every round, as
 * db-scheduler's {@code PollStrategy}.
 */
interface PopStrategy {

    /**
     * Waits until a round is due and claims its shards; null when there is none now (the worker slept or swept, or
     * the rate cap gave nothing). The worker has room for a batch when it asks.
     */
    Round next(BusinessSpec spec) throws InterruptedException;

    /** What the round's pop found, after the schedule recorded it: e.g. a shard that came back full is popped next. */
    void popped(BusinessSpec spec, Round round, List<PopResult> results);
}
