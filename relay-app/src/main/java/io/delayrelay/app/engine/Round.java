package io.delayrelay.app.engine;

/**
 * One pop call: the shards it takes, in the order pop.lua serves them, and what the worker needs after it. A round of
 * one shard and a round of several are the same type, so the store has one pop and the settler one deliver.
 *
 * @param shards    the shards popped, earliest due first
 * @param knownDue  per shard: known to hold due entries, so pop.lua skips its emptiness probe
 * @param limit     most entries the call hands out (the rate cap's allowance; at most the batch size)
 * @param leadMs    pop-ahead: schedules due within this of the pop's Redis time are taken too (0: none)
 * @param stamps    per shard: the schedule's stamp when claimed ({@link ShardSchedule#stamp})
 * @param claimedDue per shard: the due time it was claimed at (a shard the call left out goes back there)
 */
record Round(int[] shards, boolean[] knownDue, int limit, long leadMs, long[] stamps, long[] claimedDue) {

    /** A round of one shard, as a test pops it: not known due, the whole batch, no lead. */
    static Round of(int shard) {
        return of(shard, false, Integer.MAX_VALUE, 0);
    }

    /** A round of one shard. */
    static Round of(int shard, boolean knownDue, int limit, long leadMs) {
        return new Round(new int[] {shard}, new boolean[] {knownDue}, limit, leadMs, new long[1], new long[1]);
    }

    /** A round of one shard claimed at {@code claimedDueMs}, its schedule stamped {@code stamp}. */
    static Round one(int shard, boolean knownDue, int limit, long stamp, long claimedDueMs) {
        return new Round(
                new int[] {shard}, new boolean[] {knownDue}, limit, 0, new long[] {stamp}, new long[] {claimedDueMs});
    }

    /** A round of several shards with the whole batch, as a test pops them. */
    static Round of(int[] shards, boolean[] knownDue, long leadMs) {
        return new Round(shards, knownDue, Integer.MAX_VALUE, leadMs, new long[shards.length], new long[shards.length]);
    }

    /** How many shards the call pops. */
    int size() {
        return shards.length;
    }

    /** The shard of a round of one (the MDC and failures name it); -1 for several. */
    int onlyShard() {
        return shards.length == 1 ? shards[0] : -1;
    }
}
