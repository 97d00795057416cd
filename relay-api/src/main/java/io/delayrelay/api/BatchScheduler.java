package io.delayrelay.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.delayrelay.api.internal.ShardTopology;

/**
 * The producer's {@code scheduleAll}: a batch of schedules sent as one pipeline, then the removals of copies left
 * under earlier shard counts as one more. Two round trips for any batch size, instead of one or two per request.
 */
final class BatchScheduler {

    private final PipelinedScripts pipelined;

    BatchScheduler(PipelinedScripts pipelined) {
        this.pipelined = pipelined;
    }

    /**
     * Every schedule of the batch is sent before the first reply is awaited (with Lettuce; other clients send them
     * one by one), then, for the requests whose member may also sit in a shard of an earlier shard count (only while
     * a reshard's history is kept), the removals of those copies, in one more round trip: new copy first, old ones
     * after, as a single schedule does. A request that failed is not followed by removals (its earlier copy stays
     * the live one). Throws {@link ScheduleBatchException} when a request failed.
     */
    long[] scheduleAll(String business, DelayQueueKeys keys, ShardTopology topology, List<ScheduleRequest> requests) {
        long[] due = new long[requests.size()];
        int[] shards = new int[due.length];
        List<PipelinedScripts.Call> calls = new ArrayList<>(due.length);
        for (ScheduleRequest request : requests) {
            byte[] member = request.member();
            int shard = ShardSelector.shardOf(member, topology.shards());
            shards[calls.size()] = shard;
            byte[] mode = request.dueAt() != null ? ProducerScripts.AT : ProducerScripts.AFTER;
            long millis = request.dueAt() != null
                    ? request.dueAt().toEpochMilli()
                    : request.delay().toMillis();
            byte[][] options = request.options() == null ? null : ProducerScripts.optionArguments(request.options());
            calls.add(new PipelinedScripts.Call(
                    ProducerScripts.SCHEDULE,
                    ProducerScripts.keys(keys, shard),
                    ProducerScripts.scheduleArguments(keys, shard, member, mode, millis, request.payload(), options)));
        }
        Map<Integer, RuntimeException> failures = new TreeMap<>();
        List<Object> replies = pipelined.run(calls);
        List<PipelinedScripts.Call> removals = new ArrayList<>();
        List<Integer> removalOf = new ArrayList<>();
        for (int i = 0; i < due.length; i++) {
            Object reply = replies.get(i);
            if (reply instanceof RuntimeException e) {
                due[i] = -1;
                failures.put(i, e);
                continue;
            }
            due[i] = reply == null ? -1 : (Long) reply;
            byte[] member = requests.get(i).member();
            for (int earlier : topology.candidateShards(member)) {
                if (earlier != shards[i]) {
                    removals.add(new PipelinedScripts.Call(
                            ProducerScripts.CANCEL, ProducerScripts.keys(keys, earlier), new byte[][] {member}));
                    removalOf.add(i);
                }
            }
        }
        if (!removals.isEmpty()) {
            List<Object> removed = pipelined.run(removals);
            for (int k = 0; k < removed.size(); k++) {
                if (removed.get(k) instanceof RuntimeException e) {
                    // scheduled, but an earlier copy may still be live too: said, as the single call would throw
                    failures.putIfAbsent(removalOf.get(k), e);
                }
            }
        }
        if (!failures.isEmpty()) {
            throw new ScheduleBatchException(business, due, failures);
        }
        return due;
    }
}
