package io.delayrelay.app.engine;

import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes back leases that expired unconfirmed (the relay that popped them died or lost the broker), whoever held
 * them: the entry waits in {@code {K:i}:inflight} for its retry (counted as a failed attempt, original due time and
 * so message id kept), or is dead-lettered once it reaches max-attempts. The former holder's late ack or retry then
 * finds its lease token gone and changes nothing.
 * <p>
 * On demand, not on a timer: a pop reports the expired leases it saw in its shard ({@link PopResult#expiredLeases})
 * and the worker that popped takes them back at once. Every shard is popped at least once per safety sweep (or
 * max-idle without keyspace notifications), and a worker's sleep ends at the earliest score it knows, lease
 * deadlines included; so no periodic all-shard round is needed, and the idle cost does not grow with shards x
 * instances.
 */
final class LeaseReaper {

    private static final Logger log = LoggerFactory.getLogger(LeaseReaper.class);
    static final int LIMIT = 500;

    private final ShardStore store;
    private final EventReporter events;

    LeaseReaper(ShardStore store, EventReporter events) {
        this.store = store;
        this.events = events;
    }

    /**
     * Takes back every expired lease of the shard (in rounds of {@link #LIMIT}); counts them and the dead letters.
     * Never throws: a failure is counted and logged, and a shard whose keys hold foreign data is quarantined.
     */
    void reap(BusinessState state, int shard) {
        BusinessSpec spec = state.spec();
        try {
            ShardStore.RequeueResult result;
            do {
                result = store.requeueExpired(spec, shard, LIMIT);
                events.leaseExpired(spec, shard, result.requeued());
                events.deadLettered(spec, shard, DeadReason.LEASE_EXPIRED, "lease expired", result.dead());
            } while (result.requeued() + result.dead().size() >= LIMIT);
        } catch (RuntimeException e) {
            events.error(spec, shard, e);
            String cause = Exceptions.rootMessage(e);
            if (ShardQuarantine.isShardDataError(cause)) {
                state.quarantine().quarantine(spec, shard, cause);
                return;
            }
            log.warn("business={} shard={}: taking back expired leases failed: {}", spec.name(), shard, cause);
        }
    }
}
