package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/**
 * Publishes a pop-ahead's round (pop.lua's lead) in waves at its entries' due times, never before them
 * ({@link DueGate}), and settles it as one round once every wave has its outcomes. It exists so a round lasts about
 * the lead and costs no lag: what falls due within a {@link #WAVE_TICK_MS} goes out in one publish.
 */
final class AheadDelivery {

    /**
     * Two waves go out at least this far apart (Redis time): what falls due in between waits for the next wave, at
     * most this long, so a steady rate costs one publish and one confirm per tick instead of one per due ms.
     */
    static final long WAVE_TICK_MS = 4;

    /** Settles the round's published entries, per shard, with their outcomes (on a settle thread). */
    @FunctionalInterface
    interface Settle {
        void settle(
                BusinessSpec spec,
                List<BatchSettler.Part> parts,
                List<List<DueMessage>> sent,
                List<PublishOutcome> outcomes);
    }

    private final BatchPublisher publisher;
    private final EventReporter events;
    private final RelayAbility ability;
    private final Executor pool;
    private final Settle settle;

    AheadDelivery(BatchPublisher publisher, EventReporter events, RelayAbility ability, Executor pool, Settle settle) {
        this.publisher = publisher;
        this.events = events;
        this.ability = ability;
        this.pool = pool;
        this.settle = settle;
    }

    /**
     * Publishes the entries in due order, each once {@code gate} says its due time has come (the worker waits here,
     * on its own clock), everything due by then in one publish: one wait and one publish per {@link #WAVE_TICK_MS}
     * at most, none when the entries are already due (a drain). {@code finish} runs once the round is settled.
     * An interrupt during a wait (a stop whose drain deadline passed) ends it: what was published is settled, the
     * rest is left to its lease (never published early, never released before its due time) and the interrupt is
     * rethrown. Returns whether any of it reached the broker.
     */
    boolean deliver(BusinessSpec spec, List<BatchSettler.Part> parts, DueGate gate, Runnable finish)
            throws InterruptedException {
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
            long boundMs = spec.timing()
                    .publishTimeout()
                    .plus(BatchSettler.OUTCOME_GRACE)
                    .toMillis();
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
                reached |= !published.isCompletedExceptionally() && BatchSettler.reachedBroker(published);
                waves.add(published
                        .copy()
                        .orTimeout(boundMs, TimeUnit.MILLISECONDS)
                        .handle((result, error) -> {
                            for (int w = 0; w < positions.size(); w++) {
                                int[] at = positions.get(w);
                                outcomes[at[0]][at[1]] = result != null ? result.get(w) : BatchSettler.failure(error);
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
                                settle.settle(spec, parts, sent, flat);
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
}
