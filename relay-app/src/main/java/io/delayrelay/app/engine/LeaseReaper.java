package io.delayrelay.app.engine;

import java.util.Collection;
import java.util.function.Supplier;

import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes back leases that expired unconfirmed (the relay that popped them died or lost the broker), whoever held
 * them: the entry waits in {@code {K:i}:inflight} for its retry (counted as a failed attempt, original due time and
 * so message id kept), or is dead-lettered once it reaches max-attempts. The former holder's late ack or retry then
 * finds its lease token gone and changes nothing. Runs every reaper-interval over every scanned shard.
 */
final class LeaseReaper implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(LeaseReaper.class);
    static final int LIMIT = 500;

    private final Supplier<Collection<BusinessRelay>> relays;
    private final EventReporter events;

    LeaseReaper(Supplier<Collection<BusinessRelay>> relays, EventReporter events) {
        this.relays = relays;
        this.events = events;
    }

    @Override
    public void run() {
        for (BusinessRelay relay : relays.get()) {
            BusinessSpec spec = relay.spec();
            for (int shard = 0; shard < relay.state().scanWidth(); shard++) {
                try {
                    reapShard(relay, spec, shard);
                } catch (RuntimeException e) {
                    events.error(spec, shard, e);
                    log.warn(
                            "business={} shard={}: lease reaper failed: {}",
                            spec.name(),
                            shard,
                            AmqpBatchPublisher.rootMessage(e));
                }
            }
        }
    }

    private void reapShard(BusinessRelay relay, BusinessSpec spec, int shard) {
        ShardStore.RequeueResult result;
        do {
            result = relay.store().requeueExpired(spec, shard, LIMIT);
            events.leaseExpired(spec, shard, result.requeued());
            events.deadLettered(spec, shard, DeadReason.LEASE_EXPIRED, "lease expired", result.dead());
        } while (result.requeued() + result.dead().size() >= LIMIT);
    }
}
