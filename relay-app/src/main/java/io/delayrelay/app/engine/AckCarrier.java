package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Acks of one business's confirmed entries, waiting for the next pop to carry them: the settler hands them over, and
 * the next pop of any of the business's workers takes them ({@link #take}) into its pop.lua call. An ack waits at most
 * twice the business's round (linger or lead) for a pop; then it goes alone, in one ack.lua call. Waiting delays
 * nothing that is due. A crash loses nothing: a lease never acked expires and its entry is delivered again.
 */
final class AckCarrier {

    private static final Logger log = LoggerFactory.getLogger(AckCarrier.class);

    private final ShardStore store;
    private final EventReporter events;
    /** Runs the acks that go alone (the settle threads); a rejected task runs on the timer's thread. */
    private final Executor executor;

    private final List<ShardStore.Ack> waiting = new ArrayList<>();
    private BusinessSpec waitingSpec;
    /** When the oldest waiting ack was handed over (System.nanoTime). */
    private long oldestNanos;

    private boolean timerSet;

    AckCarrier(ShardStore store, EventReporter events, Executor executor) {
        this.store = store;
        this.events = events;
        this.executor = executor;
    }

    /** Confirmed entries to settle: by the next pop within the linger, else alone. */
    void carry(BusinessSpec spec, List<ShardStore.Ack> acks) {
        if (acks.isEmpty()) {
            return;
        }
        long boundMs = boundMs(spec);
        if (boundMs <= 0 || !store.combinesShards()) {
            ackAlone(spec, acks);
            return;
        }
        synchronized (this) {
            if (waiting.isEmpty()) {
                oldestNanos = System.nanoTime();
            }
            waiting.addAll(acks);
            waitingSpec = spec;
            if (!timerSet) {
                timerSet = true;
                later(boundMs);
            }
        }
    }

    /** How long an ack waits for a pop to carry it. */
    static long boundMs(BusinessSpec spec) {
        // a round lasts the linger, or the lead when popping ahead (the next pop comes at the next due time after
        // what the last one took ahead)
        return 2 * spec.round().toMillis();
    }

    /**
     * The acks waiting, for the next pop to carry (pop.lua's carried ack sections); none on a Redis Cluster, where
     * one call cannot span shards. The pop that takes them reports its failures ({@link #failedInPop}), or acks them
     * alone when it fails as a whole.
     */
    List<ShardStore.Ack> take() {
        return store.combinesShards() ? drain() : List.of();
    }

    /**
     * Carried acks a pop could not settle (a key of the wrong type): counted and logged with their shard, as an
     * ack.lua call that fails, and not tried again (what they did not settle is redelivered after the lease).
     */
    void failedInPop(BusinessSpec spec, ShardStore.Popped popped) {
        for (int i = 0; i < popped.failed().size(); i++) {
            failedAck(
                    spec,
                    popped.failed().get(i),
                    new IllegalStateException(popped.errors().get(i)));
        }
    }

    /** Settles everything waiting now (shutdown). */
    void flush() {
        List<ShardStore.Ack> due;
        BusinessSpec spec;
        synchronized (this) {
            spec = waitingSpec;
            due = drain();
        }
        if (!due.isEmpty()) {
            ackAlone(spec, due);
        }
    }

    /** How many acks wait for a pop (tests). */
    synchronized int waiting() {
        return waiting.size();
    }

    private synchronized List<ShardStore.Ack> drain() {
        if (waiting.isEmpty()) {
            return List.of();
        }
        List<ShardStore.Ack> taken = List.copyOf(waiting);
        waiting.clear();
        return taken;
    }

    private void later(long delayMs) {
        Executor timer = CompletableFuture.delayedExecutor(delayMs, TimeUnit.MILLISECONDS, this::runSettling);
        timer.execute(this::expire);
    }

    private void runSettling(Runnable task) {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException stopped) {
            task.run();
        }
    }

    /** The timer: acks that waited the linger go alone; younger ones wait for the rest of theirs. */
    private void expire() {
        List<ShardStore.Ack> due;
        BusinessSpec spec;
        synchronized (this) {
            if (waiting.isEmpty()) {
                timerSet = false;
                return;
            }
            long boundMs = boundMs(waitingSpec);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - oldestNanos);
            if (waitedMs < boundMs) {
                later(boundMs - waitedMs);
                return;
            }
            timerSet = false;
            spec = waitingSpec;
            due = drain();
        }
        ackAlone(spec, due);
    }

    private void failedAck(BusinessSpec spec, ShardStore.Ack a, RuntimeException e) {
        events.error(spec, a.shard(), e);
        log.warn(
                "business={} shard={}: acking {} confirmed message(s) failed ({}); what it did not settle is"
                        + " redelivered after the lease",
                spec.name(),
                a.shard(),
                a.members().size(),
                Exceptions.rootMessage(e));
    }

    /**
     * Acks in one ack.lua call; when it fails (a shard's keys hold the wrong type), shard by shard, so that only the
     * bad shard's fail (counted and logged with its shard; its entries are redelivered after the lease) and the
     * others are settled.
     */
    void ackAlone(BusinessSpec spec, List<ShardStore.Ack> acks) {
        if (acks.isEmpty()) {
            return;
        }
        String previous = MDC.get("business");
        MDC.put("business", spec.name());
        try {
            if (acks.size() > 1 && store.combinesShards()) {
                try {
                    store.ack(spec, acks);
                    return;
                } catch (RuntimeException e) {
                    log.debug(
                            "business={}: acking {} shards in one call failed ({}); acking each",
                            spec.name(),
                            acks.size(),
                            Exceptions.rootMessage(e));
                }
            }
            for (ShardStore.Ack a : acks) {
                try {
                    store.ack(spec, List.of(a));
                } catch (RuntimeException e) {
                    failedAck(spec, a, e);
                }
            }
        } finally {
            if (previous == null) {
                MDC.remove("business");
            } else {
                MDC.put("business", previous);
            }
        }
    }
}
