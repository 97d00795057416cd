package io.delayrelay.app.engine;

import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/**
 * What the engine reports as it works (for metrics). Implementations must be fast and must not throw; the
 * engine guards every call anyway, so a failing listener never blocks relaying.
 */
public interface RelayEvents {

    RelayEvents NOOP = new RelayEvents() {};

    /** Messages the broker confirmed; {@code confirmedAtMs} is the estimated Redis time of the confirm. */
    default void relayed(BusinessSpec spec, int shard, List<DueMessage> messages, long confirmedAtMs) {}

    /** Messages whose publish failed (nack, confirm timeout, connection trouble); they will be retried. */
    default void publishFailed(BusinessSpec spec, int shard, PublishOutcome.Cause cause, int count) {}

    /** Entries moved to the dead set. */
    default void deadLettered(BusinessSpec spec, int shard, DeadReason reason, int count) {}

    /**
     * Entries the late policy dropped (on-late: drop): popped past max-lateness or their own expiry, removed
     * unpublished; {@code reason} is {@link DeadReason#EXPIRED}'s tag. (Late entries dead-lettered instead are
     * reported by {@link #deadLettered} with reason expired.)
     */
    default void dropped(BusinessSpec spec, int shard, DeadReason reason, int count) {}

    /**
     * Per-message options the relay did not apply: {@code reason} {@code relay-header} (a producer header named like
     * one the relay sets, not published) or {@code malformed} (an options envelope it could not read: published
     * whole as the body).
     */
    default void optionsIgnored(BusinessSpec spec, int shard, String reason, int count) {}

    /** Dead letters removed to keep the dead set within a bound ({@code max-size} or {@code max-age}). */
    default void deadTrimmed(BusinessSpec spec, String bound, long count) {}

    /** Entries put back after their lease expired. */
    default void leaseExpired(BusinessSpec spec, int shard, int count) {}

    /** A reloaded setting was rejected; the business keeps its previous settings. */
    default void configRejected(String business, String problem) {}

    /** A worker thread had died (an error escaped its loop) and was started again. */
    default void workerRestarted(BusinessSpec spec, String worker) {}

    /**
     * How the business's workers learn of plain-ZADD writes now: {@code keyspace} true while Redis keyspace
     * notifications work on every master, false while the relay polls at max-idle (off, or found stopped).
     */
    default void wakeMode(BusinessSpec spec, boolean keyspace) {}

    /**
     * A worker charged the business's fleet-wide rate bucket ({@code max-rate}): {@code granted} entries may be
     * popped, {@code left} whole tokens are left in the bucket (the fleet's current allowance).
     */
    default void rateCharged(BusinessSpec spec, int granted, long left) {}

    /**
     * Messages published with a relayed-at stamp (Redis time) before their due time: never expected (the pop takes
     * only entries due by Redis TIME and the stamp is never before the pop's TIME); counted so that a test or an
     * alert sees it if it ever happens.
     */
    default void publishedEarly(BusinessSpec spec, int shard, int count) {}

    /**
     * This instance's share of the business's shards changed: it pops {@code owned} of them, one of {@code seats}
     * live seats in the fleet's division.
     */
    default void divisionChanged(BusinessSpec spec, int owned, int seats) {}

    /**
     * Whether this instance holds a seat in the business's division: false while it gave the seat up because it
     * cannot relay the business (its own pause, RabbitMQ not answering, wedged workers).
     */
    default void seatHeld(BusinessSpec spec, boolean held) {}

    /**
     * How many of this instance's shards of the business are polled now instead of heard: written so often (at least
     * 100 keyspace notifications a second) that the wake-up source unsubscribed their channels and the workers pop
     * them every few ms; 0 once every shard is heard again (or handed over to another instance).
     */
    default void shardsPolled(BusinessSpec spec, int polled) {}

    /**
     * The cold tier moved entries of a shard: {@code direction} {@code demoted} (hot to cold), {@code promoted} (cold
     * back to hot) or {@code skipped} (found cancelled or scheduled again at promotion).
     */
    default void coldMoved(BusinessSpec spec, int shard, String direction, int count) {}

    /** Live cold entries and blocks of the shards this instance moves, as its cold mover last counted them. */
    default void coldCounted(BusinessSpec spec, long entries, long blocks) {}

    /** An iteration of a worker or the reaper failed. */
    default void error(BusinessSpec spec, int shard, Throwable error) {}
}
