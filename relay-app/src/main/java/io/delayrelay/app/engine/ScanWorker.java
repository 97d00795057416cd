package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * One worker thread of a business: picks shards through the shared cursor, pops due entries, publishes them with
 * confirms and acks what the broker confirmed. When its share of the shards has nothing due it sleeps until the
 * earliest entry it saw falls due, at most max-idle, or until a producer's wake-up.
 */
final class ScanWorker implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(ScanWorker.class);
    private static final long MAX_ERROR_BACKOFF_MS = 5_000;

    /** Batches one worker may have awaiting confirms at a time. */
    static final int MAX_BATCHES_IN_FLIGHT = 4;

    private final BusinessRelay relay;
    private final int index;
    private final Semaphore batchSlots = new Semaphore(MAX_BATCHES_IN_FLIGHT);
    private final Map<Integer, CompletableFuture<Void>> shardsInFlight = new ConcurrentHashMap<>();
    private long blockEnd;
    private long blockNext;
    private int hint = WakeSignal.NO_HINT;

    ScanWorker(BusinessRelay relay, int index) {
        this.relay = relay;
        this.index = index;
    }

    @Override
    public void run() {
        MDC.put("business", relay.spec().name());
        int consecutiveErrors = 0;
        int empties = 0;
        try {
            while (relay.keepsWorker(index)) {
                BusinessSpec spec = relay.spec();
                int shard = WakeSignal.NO_HINT;
                try {
                    if (spec.paused()) {
                        relay.signal().await(relay.clock().nowMs() + spec.maxIdle().toMillis(), relay.clock());
                        continue;
                    }
                    shard = nextShard(spec);
                    MDC.put("shard", Integer.toString(shard));
                    awaitShard(shard);
                    PopResult popped = relay.store().pop(spec, shard);
                    if (popped.redisNowMs() > 0) {
                        relay.clock().observe(popped.redisNowMs());
                    }
                    relay.schedule().record(shard, popped.nextDueMs());
                    consecutiveErrors = 0;
                    if (popped.isEmpty()) {
                        if (++empties >= sweepLength(spec)) {
                            long observed = relay.signal().generation();
                            ShardSchedule.Earliest earliest = relay.schedule().earliest();
                            long now = popped.redisNowMs() > 0 ? popped.redisNowMs() : relay.clock().nowMs();
                            long idleUntil = now + spec.maxIdle().toMillis();
                            long until = Math.min(earliest.dueMs(), idleUntil);
                            int woken = relay.signal().await(Math.max(until, now + 1), relay.clock(),
                                    observed);
                            hint = woken != WakeSignal.NO_HINT ? woken
                                    : (until < idleUntil ? earliest.shard() : WakeSignal.NO_HINT);
                            empties = 0;
                        }
                        continue;
                    }
                    empties = 0;
                    deliver(spec, shard, popped);
                    if (popped.entries().size() >= spec.batchSize()) {
                        hint = shard;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } catch (RuntimeException e) {
                    relay.reportError(spec, shard, e);
                    String cause = AmqpBatchPublisher.rootMessage(e);
                    if (shard >= 0 && isShardDataError(cause)) {
                        relay.quarantine(spec, shard, cause);
                        continue;
                    }
                    consecutiveErrors++;
                    log.warn("business={} shard={}: worker iteration failed ({} in a row): {}", spec.name(), shard,
                            consecutiveErrors, cause, consecutiveErrors == 1 ? e : null);
                    if (!backOff(spec, consecutiveErrors)) {
                        return;
                    }
                } finally {
                    MDC.remove("shard");
                }
            }
        } finally {
            MDC.clear();
        }
    }

    /**
     * An error caused by what one shard's keys hold (e.g. another program wrote a string where the shard's zset
     * belongs), as opposed to a connection problem: only that shard is set aside, the worker goes on.
     */
    static boolean isShardDataError(String cause) {
        return cause.contains("WRONGTYPE");
    }

    private boolean backOff(BusinessSpec spec, int consecutiveErrors) {
        long delay = Math.min(MAX_ERROR_BACKOFF_MS, spec.maxIdle().toMillis() << Math.min(consecutiveErrors, 10));
        try {
            relay.signal().await(relay.clock().nowMs() + delay, relay.clock());
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Shards this worker covers before it may sleep: its share of one sweep over every scanned shard. */
    private static int sweepLength(BusinessSpec spec) {
        return (spec.drainShards() + spec.threads() - 1) / spec.threads();
    }

    private int nextShard(BusinessSpec spec) {
        int width = spec.drainShards();
        if (hint != WakeSignal.NO_HINT && hint < width && !relay.isQuarantined(hint)) {
            int shard = hint;
            hint = WakeSignal.NO_HINT;
            return shard;
        }
        hint = WakeSignal.NO_HINT;
        int due = relay.schedule().claimDue(relay.clock().nowMs(),
                s -> shardsInFlight.containsKey(s) || relay.isQuarantined(s));
        if (due >= 0 && due < width) {
            return due;
        }
        for (int tries = 0; ; tries++) {
            if (blockNext >= blockEnd) {
                int block = sweepLength(spec);
                blockEnd = relay.store().advanceCursor(spec.keys(), block) + 1;
                blockNext = blockEnd - block;
            }
            int shard = (int) Math.floorMod(blockNext++, (long) width);
            boolean skip = relay.isQuarantined(shard) || shardsInFlight.containsKey(shard);
            if (!skip || tries >= width) {
                return shard;
            }
        }
    }

    /**
     * Publishes the batch and returns at once; the outcome is settled (ack, retry, dead letter) on the business's
     * settle threads when the broker has confirmed. At most {@link #MAX_BATCHES_IN_FLIGHT} batches of this worker
     * await confirms at a time, and never two of the same shard (entries of a shard leave in due order).
     */
    private void deliver(BusinessSpec spec, int shard, PopResult popped) throws InterruptedException {
        List<DueMessage> batch = new ArrayList<>(popped.entries().size());
        for (PopResult.Entry entry : popped.entries()) {
            boolean byId = entry.payload() != null;
            batch.add(new DueMessage(spec.name(), shard, entry.member(), byId ? entry.payload() : entry.member(), byId,
                    entry.dueAtMs(), popped.redisNowMs(), entry.attempts() + 1,
                    messageId(spec.name(), entry.member(), entry.dueAtMs())));
        }
        batchSlots.acquire();
        CompletableFuture<Void> done = new CompletableFuture<>();
        shardsInFlight.put(shard, done);
        relay.batchStarted();
        Runnable finish = () -> {
            shardsInFlight.remove(shard, done);
            batchSlots.release();
            relay.batchSettled();
            done.complete(null);
        };
        CompletableFuture<List<PublishOutcome>> published;
        try {
            published = relay.publisher().publishAsync(spec, batch, relay.settler());
            published.handleAsync((outcomes, error) -> {
                settle(spec, shard, popped.token(), batch, outcomes, error);
                return null;
            }, relay.settler()).whenComplete((v, e) -> finish.run());
        } catch (RuntimeException | Error e) {
            finish.run();
            throw e;
        }
        List<PublishOutcome> immediate = published.getNow(null);
        if (immediate != null && !immediate.isEmpty()
                && immediate.stream().allMatch(o -> o.status() == PublishOutcome.Status.NOT_SENT)) {
            throw new BrokerUnavailableException(immediate.get(0).reason());
        }
    }

    /** Nothing of a batch reached the broker: the worker backs off instead of popping more. */
    static final class BrokerUnavailableException extends RuntimeException {
        BrokerUnavailableException(String reason) {
            super("RabbitMQ unavailable, batch put back: " + reason, null, false, false);
        }
    }

    /** Waits until this worker's batch of {@code shard}, if any, is settled. */
    private void awaitShard(int shard) throws InterruptedException {
        CompletableFuture<Void> pending = shardsInFlight.get(shard);
        if (pending != null) {
            try {
                pending.get();
            } catch (java.util.concurrent.ExecutionException e) {
                // settle failures are logged where they happen
            }
        }
    }

    /** Acks, retries or dead-letters the batch's entries: only those still leased under the batch's {@code token}. */
    private void settle(BusinessSpec spec, int shard, String token, List<DueMessage> batch,
            List<PublishOutcome> outcomes, Throwable error) {
        MDC.put("business", spec.name());
        MDC.put("shard", Integer.toString(shard));
        try {
            if (outcomes == null) {
                String reason = "publish failed: " + (error == null ? "unknown" : AmqpBatchPublisher.rootMessage(error));
                outcomes = batch.stream().map(m -> PublishOutcome.failed(reason)).toList();
            }
            List<DueMessage> confirmed = new ArrayList<>(batch.size());
            List<byte[]> returned = new ArrayList<>();
            List<byte[]> failed = new ArrayList<>();
            List<byte[]> notSent = new ArrayList<>();
            String notSentReason = null;
            String returnReason = null;
            String failReason = null;
            for (int i = 0; i < batch.size(); i++) {
                PublishOutcome outcome = outcomes.get(i);
                switch (outcome.status()) {
                    case CONFIRMED -> confirmed.add(batch.get(i));
                    case RETURNED -> {
                        returned.add(batch.get(i).member());
                        returnReason = outcome.reason();
                    }
                    case FAILED -> {
                        failed.add(batch.get(i).member());
                        failReason = outcome.reason();
                    }
                    case NOT_SENT -> {
                        notSent.add(batch.get(i).member());
                        notSentReason = outcome.reason();
                    }
                }
            }
            if (!confirmed.isEmpty()) {
                relay.store().ack(spec, shard, token, confirmed.stream().map(DueMessage::member).toList());
                relay.reportRelayed(spec, shard, confirmed);
            }
            if (!returned.isEmpty()) {
                ShardStore.RequeueResult result = relay.store().requeue(spec, shard, token, returned, 1, returnReason);
                relay.reportDead(spec, shard, returnReason, result.dead());
            }
            if (!notSent.isEmpty()) {
                relay.reportPublishFailed(spec, shard, notSentReason, notSent.size());
                relay.store().release(spec, shard, token, notSent);
            }
            if (!failed.isEmpty()) {
                log.warn("business={} shard={}: {} of {} messages not confirmed ({}); retrying after {}", spec.name(),
                        shard, failed.size(), batch.size(), failReason, spec.retryDelay());
                relay.reportPublishFailed(spec, shard, failReason, failed.size());
                ShardStore.RequeueResult result = relay.store().requeue(spec, shard, token, failed, spec.maxAttempts(), failReason);
                relay.reportDead(spec, shard, failReason, result.dead());
            }
        } catch (RuntimeException e) {
            relay.reportError(spec, shard, e);
            log.warn("business={} shard={}: settling a published batch failed ({}); its unsettled entries are "
                    + "redelivered after the lease", spec.name(), shard, AmqpBatchPublisher.rootMessage(e));
        } finally {
            MDC.clear();
        }
    }

    /** Stable across redeliveries of one scheduled entry: a name-based UUID of business, member and due time. */
    static String messageId(String business, byte[] member, long dueAtMs) {
        byte[] name = business.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] due = Long.toString(dueAtMs).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] all = new byte[name.length + 1 + member.length + 1 + due.length];
        System.arraycopy(name, 0, all, 0, name.length);
        System.arraycopy(member, 0, all, name.length + 1, member.length);
        System.arraycopy(due, 0, all, name.length + 2 + member.length, due.length);
        return UUID.nameUUIDFromBytes(all).toString();
    }
}
