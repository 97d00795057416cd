package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

import io.delayrelay.app.support.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this instance's seats in every business's {@link ShardDivision}: renews them on a thread of its own (a slow
 * housekeeping round must not let a seat expire), and hands the shards over at a graceful stop. Each business's
 * seat is its {@link SeatKeeper}'s; this class only times them.
 */
final class SeatRenewals {

    private static final Logger log = LoggerFactory.getLogger(SeatRenewals.class);

    /** Added to a renewal period in a graceful stop's hand-over: the others' renewal calls and their sweep pops. */
    static final Duration HAND_OVER_MARGIN = ShardDivision.JOIN_MARGIN;

    private final ShardDivision.Settings settings;
    private final Supplier<Collection<BusinessRelay>> relays;
    /** Called after each renewal with the business renewed: the keyspace channels follow its share. */
    private final Consumer<BusinessRelay> renewed;

    private ScheduledExecutorService thread;

    SeatRenewals(
            ShardDivision.Settings settings,
            Supplier<Collection<BusinessRelay>> relays,
            Consumer<BusinessRelay> renewed) {
        this.settings = settings;
        this.relays = relays;
        this.renewed = renewed;
    }

    /** Takes a seat for a business before its workers start. */
    void join(BusinessRelay relay) {
        relay.seats().renew();
        renewed.accept(relay);
    }

    /** Renews every seat each renewal period, when the fleet divides the shards. */
    void start() {
        if (!settings.enabled()) {
            return;
        }
        long renewMs = Math.max(1, settings.renewEvery().toMillis());
        thread = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-seats"));
        // at a fixed rate: a slow renewal must not push the next ones later (the hand-over bound counts on them)
        thread.scheduleAtFixedRate(this::renewAll, renewMs, renewMs, TimeUnit.MILLISECONDS);
    }

    /** Stops renewing (the seats themselves are given up by {@link #handOver}). */
    void stop() {
        if (thread != null) {
            thread.shutdownNow();
        }
    }

    /**
     * A graceful stop's hand-over: every seat is given up first. When another instance holds a seat, the workers
     * relay on for one renewal period plus {@link #HAND_OVER_MARGIN}, within the shutdown timeout. By then every other
     * instance has renewed and taken its part of this one's shards, so no shard is nobody's meanwhile.
     */
    void handOver(long deadlineNanos) {
        boolean others = false;
        for (BusinessRelay relay : relays.get()) {
            others |= relay.seats().leave();
        }
        if (!others || !settings.enabled()) {
            return;
        }
        long waitNanos = Math.min(
                settings.renewEvery().plus(HAND_OVER_MARGIN).toNanos(),
                Math.max(0, deadlineNanos - System.nanoTime()) / 2);
        log.info(
                "seats given up; relaying on for {} ms while the other instances take the shards over",
                TimeUnit.NANOSECONDS.toMillis(waitNanos));
        try {
            TimeUnit.NANOSECONDS.sleep(waitNanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A scheduled task: must not throw, or its schedule ends ({@link SeatKeeper#renew} never throws). */
    private void renewAll() {
        for (BusinessRelay relay : relays.get()) {
            join(relay);
        }
    }
}
