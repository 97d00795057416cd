package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
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
 * Publishes one business's batches and settles each on the business's settle threads once the broker answered:
 * confirmed entries are acked, returned ones dead-lettered, failed ones retried (dead after max-attempts), entries
 * that never reached the broker put back without counting an attempt. Counts batches published and not yet
 * settled, so that shutdown can wait for them.
 * <p>
 * It owns a delivered batch from the hand-over on: it releases the batch's {@link InFlightBudget.Reservation} once
 * the batch is settled (or could not be published at all), so the worker never frees room itself. The settle
 * threads only talk to Redis, and a batch whose outcome is not known {@link #OUTCOME_GRACE} after its publish
 * timeout is settled as failed: one stuck broker call can neither stall the settling of other batches nor keep a
 * worker's budget forever.
 * <p>
 * A batch of a pop of several shards is published as one and settled per shard. Confirmed entries are acked by the
 * workers' next pop ({@link AckCarrier}: carried in its pop.lua call), or alone after the linger. A pop-ahead's
 * batch ({@link #deliverAhead}) is published in waves at its entries' due times and settled as one. Longer than 300
 * lines because the three batch kinds share the settling of every outcome and the budget hand-over.
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
    /**
     * Two waves of a pop-ahead's batch go out at least this far apart (Redis time): what falls due in between waits
     * for the next wave, at most this long, so a steady rate costs one publish and one confirm per tick instead of one
     * per due millisecond. Never earlier than its due time.
     */
    static final long WAVE_TICK_MS = 4;

    private final ShardStore store;
    private final BatchPublisher publisher;
    private final EventReporter events;
    private final RedisClock clock;
    private final Rescheduled rescheduled;
    /** Told of every publish and of every broker answer: publishes unanswered too long give the seat up. */
    private final RelayAbility ability;

    private final ExecutorService pool;
    private final AckCarrier carrier;
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
    }

    /**
     * Publishes the batch popped from {@code shard} now and settles it later, on the settle threads. From this call
     * on the settler owns {@code reservation}: it charges the batch to it and releases it once the batch is settled
     * (or at once, when nothing could be published). Settling acts only on entries still leased under the pop's
     * lease token. Returns whether any of the batch reached the broker: false when every message was refused before
     * it was sent (no connection), so the worker backs off instead of popping more.
     */
    boolean deliver(BusinessSpec spec, int shard, PopResult popped, InFlightBudget.Reservation reservation) {
        int n = popped.entries().size();
        long size = popped.entries().stream()
                .mapToLong(e -> e.member().length + (e.payload() == null ? 0 : e.payload().length))
                .sum();
        reservation.charge(shard, n, size);
        Runnable finish = batchStarted(reservation);
        CompletableFuture<List<PublishOutcome>> published;
        try {
            List<DueMessage> batch = DueBatch.of(spec, shard, popped, events);
            ability.publishing();
            published = publisher.publish(spec, batch);
            long boundMs = spec.timing().publishTimeout().plus(OUTCOME_GRACE).toMillis();
            published
                    .copy()
                    .orTimeout(boundMs, TimeUnit.MILLISECONDS)
                    .handleAsync(
                            (outcomes, error) -> {
                                settle(spec, shard, popped.token(), batch, outcomes, error);
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

    /**
     * Charges a pop of several shards to {@code reservation} (entries and bytes, per shard) and counts it in flight;
     * the returned action frees both once it is settled.
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
        return batchStarted(reservation);
    }

    /** Counts a batch in flight; the returned action frees its reservation and the count once it is settled. */
    private Runnable batchStarted(InFlightBudget.Reservation reservation) {
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
    private static boolean reachedBroker(CompletableFuture<List<PublishOutcome>> published) {
        List<PublishOutcome> immediate = published.getNow(null);
        return immediate == null
                || immediate.isEmpty()
                || immediate.stream().anyMatch(o -> o.status() != PublishOutcome.Status.NOT_SENT);
    }

    /** One shard's part of a pop of several shards. */
    record Part(int shard, PopResult popped) {}

    /**
     * Like {@link #deliver}, for one pop of several shards: their entries go out as one batch (one publish, one
     * confirm wait) and the confirmed ones of every shard are acked in one script call ({@link ShardStore#ackMany});
     * returns, nacks and failures are settled per shard as for a single shard's batch.
     */
    boolean deliverMany(BusinessSpec spec, List<Part> parts, InFlightBudget.Reservation reservation) {
        if (parts.size() == 1) {
            return deliver(spec, parts.get(0).shard(), parts.get(0).popped(), reservation);
        }
        Runnable finish = charge(parts, reservation);
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
                                settleMany(spec, parts, perShard, outcomes, error);
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

    /**
     * Like {@link #deliverMany}, for a pop-ahead (pop.lua's lead): the entries are published in due order, each once
     * {@code gate} says its due time has come (the worker waits for it here, on its own clock), everything due by
     * then in one publish; one wait and one publish per {@link #WAVE_TICK_MS} at most, none when the entries are
     * already due (a drain). Once every publish has its outcomes, the pop is settled as one (confirmed entries acked by the
     * next pop). An interrupt during a wait (a stop whose drain deadline passed) ends it: what was published is
     * settled, the rest is left to its lease (never published early, never released before its due time) and the
     * interrupt is rethrown. Returns whether any of it reached the broker.
     */
    boolean deliverAhead(BusinessSpec spec, List<Part> parts, InFlightBudget.Reservation reservation, DueGate gate)
            throws InterruptedException {
        Runnable finish = charge(parts, reservation);
        boolean reached = false;
        InterruptedException interrupted = null;
        try {
            List<List<DueMessage>> perShard = new ArrayList<>(parts.size());
            // every message as {part, index}, in due order (stable: a shard's entries keep the pop's order)
            List<int[]> order = new ArrayList<>();
            for (int i = 0; i < parts.size(); i++) {
                List<DueMessage> messages =
                        DueBatch.of(spec, parts.get(i).shard(), parts.get(i).popped(), events);
                perShard.add(messages);
                for (int j = 0; j < messages.size(); j++) {
                    order.add(new int[] {i, j});
                }
            }
            order.sort(Comparator.comparingLong(
                    at -> perShard.get(at[0]).get(at[1]).dueAtMs()));
            PublishOutcome[][] outcomes = new PublishOutcome[parts.size()][];
            for (int i = 0; i < parts.size(); i++) {
                outcomes[i] = new PublishOutcome[perShard.get(i).size()];
            }
            long boundMs = spec.timing().publishTimeout().plus(OUTCOME_GRACE).toMillis();
            List<CompletableFuture<?>> waves = new ArrayList<>();
            int k = 0;
            long lastWaveMs = Long.MIN_VALUE;
            while (k < order.size()) {
                long waveAt = dueAt(perShard, order.get(k));
                if (lastWaveMs != Long.MIN_VALUE) {
                    waveAt = Math.max(waveAt, lastWaveMs + WAVE_TICK_MS);
                }
                try {
                    gate.await(waveAt);
                } catch (InterruptedException e) {
                    interrupted = e;
                    break;
                }
                long now = gate.nowMs();
                lastWaveMs = now;
                int end = k + 1;
                while (end < order.size() && dueAt(perShard, order.get(end)) <= now) {
                    end++;
                }
                List<int[]> positions = order.subList(k, end);
                List<DueMessage> wave = new ArrayList<>(positions.size());
                for (int[] at : positions) {
                    wave.add(perShard.get(at[0]).get(at[1]));
                }
                CompletableFuture<List<PublishOutcome>> published;
                try {
                    ability.publishing();
                    published = publisher.publish(spec, wave);
                } catch (RuntimeException e) {
                    // earlier waves are out: this one is settled as failed (retried after the retry delay, so
                    // after its due time), not left to the lease with the rest
                    published = CompletableFuture.failedFuture(e);
                }
                reached |= !published.isCompletedExceptionally() && reachedBroker(published);
                waves.add(published
                        .copy()
                        .orTimeout(boundMs, TimeUnit.MILLISECONDS)
                        .handle((result, error) -> {
                            for (int w = 0; w < positions.size(); w++) {
                                int[] at = positions.get(w);
                                outcomes[at[0]][at[1]] = result != null ? result.get(w) : failure(error);
                            }
                            return null;
                        }));
                k = end;
            }
            CompletableFuture.allOf(waves.toArray(new CompletableFuture<?>[0]))
                    .handleAsync(
                            (v, error) -> {
                                // what was published, with its outcomes; the rest (an interrupt) is left to its lease
                                List<List<DueMessage>> sent = new ArrayList<>(parts.size());
                                List<PublishOutcome> flat = new ArrayList<>();
                                for (int i = 0; i < parts.size(); i++) {
                                    List<DueMessage> own = new ArrayList<>();
                                    for (int j = 0; j < outcomes[i].length; j++) {
                                        if (outcomes[i][j] != null) {
                                            own.add(perShard.get(i).get(j));
                                            flat.add(outcomes[i][j]);
                                        }
                                    }
                                    sent.add(own);
                                }
                                settleMany(spec, parts, sent, flat, null);
                                return null;
                            },
                            pool)
                    .whenComplete((v, e) -> finish.run());
        } catch (RuntimeException | Error e) {
            finish.run();
            throw e;
        }
        if (interrupted != null) {
            throw interrupted;
        }
        return reached;
    }

    private static long dueAt(List<List<DueMessage>> perShard, int[] at) {
        return perShard.get(at[0]).get(at[1]).dueAtMs();
    }

    /** The outcome of every message of a batch whose publish ended with {@code error} instead of outcomes. */
    private static PublishOutcome failure(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        return cause instanceof TimeoutException
                ? PublishOutcome.failed(
                        PublishOutcome.Cause.CONFIRM_TIMEOUT,
                        "confirm timeout: no outcome " + OUTCOME_GRACE.toSeconds() + " s after the publish timeout")
                : PublishOutcome.failed(
                        PublishOutcome.Cause.OTHER,
                        "publish failed: " + (cause == null ? "unknown" : Exceptions.rootMessage(cause)));
    }

    private void settleMany(
            BusinessSpec spec,
            List<Part> parts,
            List<List<DueMessage>> perShard,
            List<PublishOutcome> outcomes,
            Throwable error) {
        List<ShardStore.Ack> acks = new ArrayList<>(parts.size());
        List<List<DueMessage>> confirmedPerShard = new ArrayList<>(parts.size());
        int at = 0;
        for (int i = 0; i < parts.size(); i++) {
            Part part = parts.get(i);
            List<DueMessage> batch = perShard.get(i);
            List<PublishOutcome> own = outcomes == null ? null : outcomes.subList(at, at + batch.size());
            at += batch.size();
            List<DueMessage> confirmed = new ArrayList<>();
            settle(spec, part.shard(), part.popped().token(), batch, own, error, confirmed);
            confirmedPerShard.add(confirmed);
            if (!confirmed.isEmpty()) {
                acks.add(ack(part.shard(), part.popped().token(), confirmed));
            }
        }
        if (acks.isEmpty()) {
            return;
        }
        carrier.carry(spec, acks);
        long confirmedAt = clock.nowMs();
        for (int i = 0; i < parts.size(); i++) {
            int shard = parts.get(i).shard();
            List<DueMessage> confirmed = confirmedPerShard.get(i);
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

    private void settle(
            BusinessSpec spec,
            int shard,
            String token,
            List<DueMessage> batch,
            List<PublishOutcome> outcomes,
            Throwable error) {
        settle(spec, shard, token, batch, outcomes, error, null);
    }

    /**
     * Settles one shard's batch; {@code confirmedSink} non-null: its confirmed entries are added there for the caller
     * to ack (with other shards'), else they are acked here.
     */
    private void settle(
            BusinessSpec spec,
            int shard,
            String token,
            List<DueMessage> batch,
            List<PublishOutcome> outcomes,
            Throwable error,
            List<DueMessage> confirmedSink) {
        MDC.put("business", spec.name());
        MDC.put("shard", Integer.toString(shard));
        try {
            if (outcomes == null) {
                PublishOutcome failure = failure(error);
                outcomes = batch.stream().map(m -> failure).toList();
            }
            apply(spec, shard, token, batch, outcomes, confirmedSink);
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
    }

    private void apply(
            BusinessSpec spec,
            int shard,
            String token,
            List<DueMessage> batch,
            List<PublishOutcome> outcomes,
            List<DueMessage> confirmedSink) {
        List<DueMessage> confirmed = new ArrayList<>(batch.size());
        List<byte[]> returned = new ArrayList<>();
        List<byte[]> failed = new ArrayList<>();
        List<byte[]> notSent = new ArrayList<>();
        PublishOutcome notSentOutcome = null;
        PublishOutcome returnOutcome = null;
        PublishOutcome failOutcome = null;
        for (int i = 0; i < batch.size(); i++) {
            PublishOutcome outcome = outcomes.get(i);
            if (answered(outcome)) {
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
        if (confirmedSink != null) {
            confirmedSink.addAll(confirmed);
        } else if (!confirmed.isEmpty()) {
            carrier.carry(spec, List.of(ack(shard, token, confirmed)));
            long confirmedAt = clock.nowMs();
            events.emit(spec, shard, e -> e.relayed(spec, shard, confirmed, confirmedAt));
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

    /**
     * Whether the broker answered this message: confirmed, returned, or refused it itself (nack, no such exchange,
     * access refused). Not sent, not confirmed in time or a channel lost: no answer. A message the relay could not
     * build says nothing of the broker either way.
     */
    private static boolean answered(PublishOutcome outcome) {
        return switch (outcome.status()) {
            case CONFIRMED, RETURNED -> true;
            case FAILED -> switch (outcome.cause()) {
                case NACK, EXCHANGE_NOT_FOUND, ACCESS_REFUSED -> true;
                default -> false;
            };
            default -> false;
        };
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
