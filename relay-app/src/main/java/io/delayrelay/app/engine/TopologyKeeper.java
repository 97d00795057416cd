package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps each business's scan width in step with {@code K:meta}: scans up to the largest shard count any relay
 * instance still drains, and retires a draining count once its extra shards held nothing (scheduled or in flight)
 * in two checks at least {@code grace} after it was first seen (producers cache the shard count for a few
 * seconds, so a late one may still write to a retired shard just after a change).
 */
final class TopologyKeeper implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(TopologyKeeper.class);

    private final Supplier<Collection<BusinessRelay>> relays;
    private final Duration grace;
    private final LongSupplier nanoClock;
    private final EventReporter events;
    /** business -> draining count -> when this instance first saw it (nanos). */
    private final Map<String, Map<Integer, Long>> firstSeen = new HashMap<>();
    /** business -> draining counts found empty at the previous check. */
    private final Map<String, Map<Integer, Boolean>> emptyBefore = new HashMap<>();

    TopologyKeeper(Supplier<Collection<BusinessRelay>> relays, Duration grace, LongSupplier nanoClock,
            EventReporter events) {
        this.relays = relays;
        this.events = events;
        this.grace = grace;
        this.nanoClock = nanoClock;
    }

    @Override
    public void run() {
        for (BusinessRelay relay : relays.get()) {
            BusinessSpec spec = relay.spec();
            try {
                keep(relay, spec);
            } catch (RuntimeException e) {
                events.error(spec, -1, e);
                log.warn("business={}: checking the shard topology failed: {}", spec.name(), AmqpBatchPublisher.rootMessage(e));
            }
        }
    }

    private void keep(BusinessRelay relay, BusinessSpec spec) {
        int[] draining = relay.store().draining(spec.keys());
        long now = nanoClock.getAsLong();
        Map<Integer, Long> seen = firstSeen.computeIfAbsent(spec.name(), k -> new HashMap<>());
        Map<Integer, Boolean> wasEmpty = emptyBefore.computeIfAbsent(spec.name(), k -> new HashMap<>());
        seen.keySet().retainAll(Arrays.stream(draining).boxed().toList());
        wasEmpty.keySet().retainAll(seen.keySet());
        int[] drained = Arrays.stream(draining).filter(m -> {
            if (m <= spec.shards()) {
                return true;
            }
            long since = seen.computeIfAbsent(m, k -> now);
            boolean empty = extraShardsEmpty(relay, spec, m);
            boolean retire = empty && Boolean.TRUE.equals(wasEmpty.get(m)) && now - since >= grace.toNanos();
            wasEmpty.put(m, empty);
            return retire;
        }).toArray();
        if (drained.length > 0) {
            draining = relay.store().undrain(spec.keys(), drained);
            log.info("business={}: shards beyond {} are empty; stopped draining shard count(s) {}", spec.name(),
                    spec.shards(), Arrays.toString(drained));
        }
        relay.state().followTopology(draining);
    }

    private static boolean extraShardsEmpty(BusinessRelay relay, BusinessSpec spec, int upTo) {
        for (int shard = spec.shards(); shard < upTo; shard++) {
            if (relay.store().shardSize(spec.keys(), shard) > 0) {
                return false;
            }
        }
        return true;
    }
}
