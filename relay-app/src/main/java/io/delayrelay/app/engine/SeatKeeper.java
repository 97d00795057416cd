package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one business's seat in the fleet's {@link ShardDivision} while this instance can relay it
 * ({@link RelayAbility}), and gives it up while it cannot: every renewal period (on the engine's seat thread) it asks
 * the ability, renews or gives up, reports the share, and sweeps the shards newly this instance's. A seat given up
 * because RabbitMQ did not answer is taken again once a probe of the broker (the business's exchange checked on a
 * channel, on a thread of its own so a frozen broker cannot hold the seat thread) is answered.
 */
final class SeatKeeper {

    private static final Logger log = LoggerFactory.getLogger(SeatKeeper.class);
    /** How long a renewal waits for a broker probe it started; an unfinished one is looked at next time. */
    private static final long PROBE_WAIT_MS = 500;

    private final ShardDivision division;
    private final RelayAbility ability;
    private final SeatStore seats;
    private final BatchPublisher publisher;
    private final BusinessState state;
    private final EventReporter events;
    /** Called with the shards newly this instance's: they are swept at once. */
    private final Consumer<List<Integer>> gainedShards;
    /** Renewals of the seat that failed in a row (the first one is logged, and the recovery). */
    private int seatFailures;
    /** Whether the division's gauges were set once. */
    private boolean reported;
    /** The broker probe running while the seat is given up for the broker; null when none. */
    private CompletableFuture<Boolean> probe;

    SeatKeeper(
            ShardDivision division,
            RelayAbility ability,
            SeatStore seats,
            BatchPublisher publisher,
            BusinessState state,
            EventReporter events,
            Consumer<List<Integer>> gainedShards) {
        this.division = division;
        this.ability = ability;
        this.seats = seats;
        this.publisher = publisher;
        this.state = state;
        this.events = events;
        this.gainedShards = gainedShards;
    }

    /**
     * Renews the seat, or gives it up while this instance cannot relay the business; shards that became this
     * instance's are swept at once. Never throws: a failure is logged (first of a streak) and counted; after a whole
     * seat TTL of failures the instance pops every shard.
     */
    synchronized void renew() {
        BusinessSpec spec = state.spec();
        int width = state.scanWidth();
        ShardDivision.Share before = division.effective();
        String givenUpBefore = division.givenUp();
        boolean[] ownedBefore = division.ownership(width);
        RelayAbility.Reason unable = unable(spec);
        if (unable == RelayAbility.Reason.BROKER && givenUpBefore != null && brokerAnswers(spec)) {
            ability.reachableAgain();
            unable = unable(spec);
        }
        List<Integer> gained = List.of();
        if (unable != null) {
            giveUp(spec, unable, givenUpBefore);
        } else {
            gained = renewSeat(spec, ownedBefore, width);
            if (givenUpBefore != null && division.givenUp() == null) {
                log.info(
                        "business={}: this instance can relay again ({} no longer holds); took a seat in {}",
                        spec.name(),
                        givenUpBefore,
                        spec.keys().seats());
            }
        }
        ShardDivision.Share after = division.effective();
        boolean changed = !after.equals(before) || !Objects.equals(givenUpBefore, division.givenUp());
        if (changed || !reported) {
            reported = true;
            int owned = after.count(width);
            boolean seated = division.givenUp() == null;
            events.emit(spec, -1, e -> e.divisionChanged(spec, owned, after.of()));
            events.emit(spec, -1, e -> e.seatHeld(spec, seated));
        }
        if (!after.equals(before) && after.rank() >= 0) {
            log.info(
                    "business={}: this instance pops {} of {} shards now (seat {}, rank {} of {} live seats){}",
                    spec.name(),
                    after.count(width),
                    width,
                    after.seat(),
                    after.rank(),
                    after.of(),
                    gained.isEmpty() ? "" : "; sweeping the shards it took over: " + gained);
        }
        if (!gained.isEmpty()) {
            gainedShards.accept(gained);
        }
    }

    private RelayAbility.Reason unable(BusinessSpec spec) {
        if (!division.settings().enabled()) {
            // without the division every instance pops every shard: there is no seat to give up
            return null;
        }
        Duration lead = spec.popsAhead() ? spec.timing().lead() : Duration.ZERO;
        return ability.unable(spec.paused(), spec.threads(), division.settings().giveUpAfter(), lead);
    }

    private List<Integer> renewSeat(BusinessSpec spec, boolean[] ownedBefore, int width) {
        try {
            List<Integer> gained = division.renew(seats, spec.keys(), width);
            if (seatFailures > 0) {
                log.info(
                        "business={}: seat in {} renewed again",
                        spec.name(),
                        spec.keys().seats());
            }
            seatFailures = 0;
            return gained;
        } catch (RuntimeException e) {
            events.error(spec, -1, e);
            if (seatFailures++ == 0) {
                log.warn(
                        "business={}: renewing this instance's seat in {} failed ({}); after {} without a renewal "
                                + "it pops every shard",
                        spec.name(),
                        spec.keys().seats(),
                        Exceptions.rootMessage(e),
                        division.settings().seatTtl());
            }
            return division.gainedSince(ownedBefore, width);
        }
    }

    /** Gives the seat up (again: a failed HDEL is tried at every renewal; a repeated one costs one command). */
    private void giveUp(BusinessSpec spec, RelayAbility.Reason reason, String givenUpBefore) {
        if (givenUpBefore == null) {
            log.warn(
                    "business={}: giving up this instance's seat in {}: {}; the other instances pop its shards from "
                            + "their next renewal (within {}); it takes a seat again once it can relay",
                    spec.name(),
                    spec.keys().seats(),
                    reason.text(),
                    division.settings().renewEvery());
        }
        try {
            division.giveUp(seats, spec.keys(), reason.text());
        } catch (RuntimeException e) {
            events.error(spec, -1, e);
            log.debug("business={}: removing the seat failed; it expires by itself", spec.name(), e);
        }
    }

    /** Whether the broker answered a probe (one at a time; a probe still running is looked at next time). */
    private boolean brokerAnswers(BusinessSpec spec) {
        if (probe == null) {
            probe = CompletableFuture.supplyAsync(
                    () -> {
                        publisher.prepareExchange(spec);
                        return true;
                    },
                    r -> DaemonThreads.named("relay-broker-probe").newThread(r).start());
        }
        try {
            boolean answered = probe.get(PROBE_WAIT_MS, TimeUnit.MILLISECONDS);
            probe = null;
            return answered;
        } catch (TimeoutException stillRunning) {
            return false;
        } catch (ExecutionException e) {
            probe = null;
            log.debug("business={}: broker probe failed: {}", spec.name(), Exceptions.rootMessage(e));
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Tells the fleet on {@code K:wake} of a retry at {@code dueMs} put back in a shard no longer this instance's: its
     * current owner pops it at its time, not at the next sweep. Never throws.
     */
    void retryElsewhere(int shard, long dueMs) {
        try {
            seats.announceToFleet(state.spec().keys(), shard, dueMs);
        } catch (RuntimeException e) {
            log.debug(
                    "business={} shard={}: telling the fleet of a retry failed",
                    state.spec().name(),
                    shard,
                    e);
        }
    }

    /**
     * Gives the seat up at a graceful stop; the share stays in force until the workers stop. Returns whether
     * another instance holds a seat (then the workers relay on for the hand-over period first).
     */
    synchronized boolean leave() {
        boolean others = division.effective().of() > 1;
        int width = state.scanWidth();
        boolean[] ownedBefore = division.ownership(width);
        try {
            division.leave(seats, state.spec().keys());
            // a leave that finds the seats changed since the last renewal pops every shard through the hand-over
            List<Integer> gained = division.gainedSince(ownedBefore, width);
            if (!gained.isEmpty()) {
                gainedShards.accept(gained);
            }
        } catch (RuntimeException e) {
            log.warn(
                    "business={}: giving up the seat failed ({}); it expires after {}",
                    state.spec().name(),
                    e.toString(),
                    division.settings().seatTtl());
        }
        return others;
    }
}
