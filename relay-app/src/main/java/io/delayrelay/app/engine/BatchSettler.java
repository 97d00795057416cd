package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Publishes one business's rounds and settles each on the business's settle threads once the broker answered:
 * confirmed entries are acked (carried by the next pop, {@link AckCarrier}), returned ones dead-lettered, failed ones
 * retried (dead after max-attempts), entries that never reached the broker put back without counting an attempt. It
 * owns a round's {@link InFlightBudget.Reservation} from the hand-over on, and counts rounds not yet settled so that
 * shutdown can wait for them. A round whose outcome is not known {@link #OUTCOME_GRACE} after its publish timeout is
 * settled as failed: one stuck broker call cannot keep a worker's budget forever.
 */
final class BatchSettler {

    /** Told that entries of a shard were put back for a retry due from {@code dueMs} on (Redis time). */
    @FunctionalInterface
    interface Rescheduled {
        void at(int shard, long dueMs);
    }

    private static final Logger log = LoggerFactory.getLogger(BatchSettler.class);
    private static final int SETTLE_THREADS = 2;
    /** How long after the publish timeout a batch's outcome may still come before the batch counts as failed. */
    static final Duration OUTCOME_GRACE = Duration.ofSeconds(5);

    private final ShardStore store;
    private final BatchPublisher publisher;
    private final EventReporter events;
    private final RedisClock clock;
    private final Rescheduled rescheduled;
    /** Told of every publish and of every broker answer: publishes unanswered too long give the seat up. */
    private final RelayAbility ability;

    private final ExecutorService pool;
    private final AckCarrier carrier;
    private final AheadDelivery ahead;
    private final Object monitor = new Object();
    private int batchesInFlight;

    BatchSettler(
            String threadNamePrefix,
            ShardStore store,
            BatchPublisher publisher,
            EventReporter events,
            RedisClock clock,
            Rescheduled rescheduled,
            RelayAbility ability) {
        this.store = store;
        this.ability = ability;
        this.rescheduled = rescheduled;
        this.publisher = publisher;
        this.events = events;
        this.clock = clock;
        this.pool = Executors.newFixedThreadPool(SETTLE_THREADS, DaemonThreads.numbered(threadNamePrefix + "settle-"));
        this.carrier = new AckCarrier(store, events, pool);
        this.ahead = new AheadDelivery(
                publisher,
                events,
                ability,
                pool,
                (spec, parts, sent, outcomes) -> settleRound(spec, parts, sent, outcomes, null));
    }

    /**
     * Charges the round to {@code reservation} (entries and bytes, per shard) and counts it in flight; the returned
     * action frees both once it is settled.
     */
    private Runnable charge(List<Part> parts, InFlightBudget.Reservation reservation) {
        int n = 0;
        long size = 0;
        int[] shards = new int[parts.size()];
        for (int i = 0; i < parts.size(); i++) {
            shards[i] = parts.get(i).shard();
            for (PopResult.Entry e : parts.get(i).popped().entries()) {
                n++;
                size += e.member().length + (e.payload() == null ? 0 : e.payload().length);
            }
        }
        reservation.charge(shards, n, size);
        synchronized (monitor) {
            batchesInFlight++;
        }
        return () -> {
            try {
                reservation.release();
            } finally {
                synchronized (monitor) {
                    batchesInFlight--;
                    monitor.notifyAll();
                }
            }
        };
    }

    /** Whether any of a batch reached the broker, or may still (its outcomes are not known yet). */
    static boolean reachedBroker(CompletableFuture<List<PublishOutcome>> published) {
        List<PublishOutcome> immediate = published.getNow(null);
        return immediate == null
                || immediate.isEmpty()
                || immediate.stream().anyMatch(o -> o.status() != PublishOutcome.Status.NOT_SENT);
    }

    /** One shard's part of a round: what its pop handed out. */
    record Part(int shard, PopResult popped) {}

    /**
     * Publishes what a round popped and settles it later, on the settle threads. From this call on the settler owns
     * {@code reservation}: it charges the batch to it and releases it once the batch is settled (or at once, when
     * nothing could be published). Settling acts only on entries still leased under the pop's lease token. A round
     * of several shards goes out as one batch and is settled per shard; a pop-ahead's entries not due yet go out at
     * their due times ({@link AheadDelivery}). Returns whether any of it reached the broker: false when every
     * message was refused before it was sent (no connection), so the worker backs off instead of popping more.
     */
    boolean deliver(BusinessSpec spec, Round round, ShardStore.Popped popped, InFlightBudget.Reservation reservation)
            throws InterruptedException {
        List<Part> parts = new ArrayList<>(round.size());
        long redisNowMs = 0;
        for (int i = 0; i < round.size(); i++) {
            PopResult result = popped.results().get(i);
            if (!result.isEmpty()) {
                parts.add(new Part(round.shards()[i], result));
                redisNowMs = Math.max(redisNowMs, result.redisNowMs());
            }
        }
        if (parts.isEmpty()) {
            return true;
        }
        Runnable finish = charge(parts, reservation);
        if (round.leadMs() > 0 && aheadOf(parts, redisNowMs)) {
            // some entries are not due yet: each goes out at its due time (the worker waits for it)
            return ahead.deliver(spec, parts, new DueGate(redisNowMs, popped.receivedNanos(), clock), finish);
        }
        CompletableFuture<List<PublishOutcome>> published;
        try {
            List<DueMessage> batch = new ArrayList<>();
            List<List<DueMessage>> perShard = new ArrayList<>(parts.size());
            for (Part part : parts) {
                List<DueMessage> messages = DueBatch.of(spec, part.shard(), part.popped(), events);
                perShard.add(messages);
                batch.addAll(messages);
            }
            ability.publishing();
            published = publisher.publish(spec, batch);
            long boundMs = spec.timing().publishTimeout().plus(OUTCOME_GRACE).toMillis();
            published
                    .copy()
                    .orTimeout(boundMs, TimeUnit.MILLISECONDS)
                    .handleAsync(
                            (outcomes, error) -> {
                                settleRound(spec, parts, perShard, outcomes, error);
                                return null;
                            },
                            pool)
                    .whenComplete((v, e) -> finish.run());
        } catch (RuntimeException | Error e) {
            finish.run();
            throw e;
        }
        return reachedBroker(published);
    }

    /** Whether a pop handed out an entry due after its Redis time (taken ahead, within the lead). */
    private static boolean aheadOf(List<Part> parts, long redisNowMs) {
        for (Part part : parts) {
            for (PopResult.Entry e : part.popped().entries()) {
                if (e.dueAtMs() > redisNowMs) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The outcome of every message of a batch whose publish ended with {@code error} instead of outcomes. */
    static PublishOutcome failure(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        return cause instanceof TimeoutException
                ? PublishOutcome.failed(
                        PublishOutcome.Cause.CONFIRM_TIMEOUT,
                        "confirm timeout: no outcome " + OUTCOME_GRACE.toSeconds() + " s after the publish timeout")
                : PublishOutcome.failed(
                        PublishOutcome.Cause.OTHER,
                        "publish failed: " + (cause == null ? "unknown" : Exceptions.rootMessage(cause)));
    }

    /** Settles each shard's part of a round; the confirmed entries of all of them go to the carrier as one. */
    private void settleRound(
            BusinessSpec spec,
            List<Part> parts,
            List<List<DueMessage>> perShard,
            List<PublishOutcome> outcomes,
            Throwable error) {
        List<ShardStore.Ack> acks = new ArrayList<>(parts.size());
        List<List<DueMessage>> relayed = new ArrayList<>(parts.size());
        int at = 0;
        for (int i = 0; i < parts.size(); i++) {
            int shard = parts.get(i).shard();
            String token = parts.get(i).popped().token();
            List<DueMessage> batch = perShard.get(i);
            List<PublishOutcome> own = outcomes == null
                    ? Collections.nCopies(batch.size(), failure(error))
                    : outcomes.subList(at, at + batch.size());
            at += batch.size();
            List<DueMessage> confirmed = settle(spec, shard, token, batch, own);
            if (!confirmed.isEmpty()) {
                acks.add(ack(shard, token, confirmed));
            }
            relayed.add(confirmed);
        }
        if (acks.isEmpty()) {
            return;
        }
        carrier.carry(spec, acks);
        long confirmedAt = clock.nowMs();
        for (int i = 0; i < parts.size(); i++) {
            int shard = parts.get(i).shard();
            List<DueMessage> confirmed = relayed.get(i);
            if (!confirmed.isEmpty()) {
                events.emit(spec, shard, e -> e.relayed(spec, shard, confirmed, confirmedAt));
            }
        }
    }

    private static ShardStore.Ack ack(int shard, String token, List<DueMessage> confirmed) {
        return new ShardStore.Ack(
                shard,
                token,
                confirmed.stream().map(DueMessage::member).toList(),
                confirmed.stream().anyMatch(DueMessage::byId));
    }

    /** The acks of confirmed entries, waiting for the workers' next pop to carry them. */
    AckCarrier carrier() {
        return carrier;
    }

    /**
     * Waits until every published batch is settled, or the deadline passes; then settles the acks still waiting for
     * a pop and stops the settle threads.
     */
    void shutdown(String business, long deadlineNanos) {
        synchronized (monitor) {
            while (batchesInFlight > 0) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    log.warn(
                            "business={}: {} published batch(es) still unconfirmed at shutdown; left to the lease",
                            business,
                            batchesInFlight);
                    break;
                }
                try {
                    monitor.wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        carrier.flush();
        pool.shutdown();
    }

    /**
     * Settles one shard's batch by its outcomes and returns its confirmed entries, for the round's ack. A failure is
     * counted and logged: what it did not settle is redelivered after the lease.
     */
    private List<DueMessage> settle(
            BusinessSpec spec, int shard, String token, List<DueMessage> batch, List<PublishOutcome> outcomes) {
        MDC.put("business", spec.name());
        MDC.put("shard", Integer.toString(shard));
        List<DueMessage> confirmed = new ArrayList<>(batch.size());
        try {
            apply(spec, shard, token, batch, outcomes, confirmed);
        } catch (RuntimeException e) {
            events.error(spec, shard, e);
            log.warn(
                    "business={} shard={}: settling a published batch failed ({}); its unsettled entries are "
                            + "redelivered after the lease",
                    spec.name(),
                    shard,
                    Exceptions.rootMessage(e));
        } finally {
            MDC.clear();
        }
        return confirmed;
    }

    private void apply(
            BusinessSpec spec,
            int shard,
            String token,
            List<DueMessage> batch,
            List<PublishOutcome> outcomes,
            List<DueMessage> confirmed) {
        List<byte[]> returned = new ArrayList<>();
        List<byte[]> failed = new ArrayList<>();
        List<byte[]> notSent = new ArrayList<>();
        PublishOutcome notSentOutcome = null;
        PublishOutcome returnOutcome = null;
        PublishOutcome failOutcome = null;
        for (int i = 0; i < batch.size(); i++) {
            PublishOutcome outcome = outcomes.get(i);
            if (outcome.answered()) {
                ability.answered();
            }
            switch (outcome.status()) {
                case CONFIRMED -> confirmed.add(batch.get(i));
                case RETURNED -> {
                    returned.add(batch.get(i).member());
                    returnOutcome = outcome;
                }
                case REJECTED -> reject(spec, shard, token, batch.get(i), outcome);
                case FAILED -> {
                    failed.add(batch.get(i).member());
                    failOutcome = outcome;
                }
                case NOT_SENT -> {
                    notSent.add(batch.get(i).member());
                    notSentOutcome = outcome;
                }
            }
        }
        if (!returned.isEmpty()) {
            ShardStore.RequeueResult result = store.requeue(spec, shard, token, returned, 1, returnOutcome.reason());
            retried(spec, shard, result.requeued());
            events.deadLettered(spec, shard, DeadReason.UNROUTABLE, returnOutcome.reason(), result.dead());
        }
        if (!notSent.isEmpty()) {
            PublishOutcome.Cause cause = notSentOutcome.cause();
            log.warn(
                    "business={} shard={}: {} of {} messages not sent ({}); put back without counting an attempt",
                    spec.name(),
                    shard,
                    notSent.size(),
                    batch.size(),
                    notSentOutcome.reason());
            events.emit(spec, shard, e -> e.publishFailed(spec, shard, cause, notSent.size()));
            store.release(spec, shard, token, notSent);
            retried(spec, shard, notSent.size());
        }
        if (!failed.isEmpty()) {
            PublishOutcome outcome = failOutcome;
            log.warn(
                    "business={} shard={}: {} of {} messages not confirmed ({}); retrying after {}",
                    spec.name(),
                    shard,
                    failed.size(),
                    batch.size(),
                    outcome.reason(),
                    spec.retry().delay());
            events.emit(spec, shard, e -> e.publishFailed(spec, shard, outcome.cause(), failed.size()));
            ShardStore.RequeueResult result =
                    store.requeue(spec, shard, token, failed, spec.retry().maxAttempts(), outcome.reason());
            retried(spec, shard, result.requeued());
            events.deadLettered(spec, shard, DeadReason.MAX_ATTEMPTS, outcome.reason(), result.dead());
        }
    }

    /** Entries put back wait at least the retry delay: the workers look at their shard then. */
    private void retried(BusinessSpec spec, int shard, int requeued) {
        if (requeued > 0) {
            rescheduled.at(shard, clock.nowMs() + spec.retry().delay().toMillis());
        }
    }

    /** A message that can never be published (it breaks an AMQP limit) goes to the dead set at once, with its reason. */
    private void reject(BusinessSpec spec, int shard, String token, DueMessage message, PublishOutcome outcome) {
        events.emit(spec, shard, e -> e.publishFailed(spec, shard, outcome.cause(), 1));
        ShardStore.RequeueResult result =
                store.requeue(spec, shard, token, List.of(message.member()), 1, outcome.reason());
        events.deadLettered(spec, shard, DeadReason.INVALID_MESSAGE, outcome.reason(), result.dead());
    }
}
