package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import io.delayrelay.api.autoconfigure.DelayRelayProducerProperties;
import io.delayrelay.api.internal.ShardTopology;
import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps each business's scan width in step with {@code K:meta}: scans up to the largest of this instance's own
 * shard count, the count {@code K:meta} has in force and every count it still drains. A draining count is retired
 * on what Redis says only: once the shards beyond the count in force held nothing (scheduled, in flight or waiting
 * for a retry, or dead) in two checks at least {@code grace} after this instance first saw it draining (producers
 * cache the shard count for a few seconds, so a late one may still write to a retired shard just after a change).
 * This instance's own configured count plays no part: during a rolling update an old instance still configured with
 * the retired count must not retire it while the new instances rely on its shards being drained.
 * <p>
 * Dead letters keep their count draining rather than being moved to a shard in force: every dead-letter reader
 * (list, replay, purge, trim, counts) goes over the scan width, so they stay reachable where they are, and a
 * replayed one is delivered from there. A move would cross cluster slots (not one atomic script: an interruption
 * leaves a copy twice or, in the other order, none) and would put the letter where its id's other copies are not.
 * The cost is popping the extra shards until the letters are replayed, purged or trimmed ({@code dead-max-age}).
 * <p>
 * A {@code K:meta} that lost its shard count is written again from the live configuration at the next check, with
 * the producers' fallback count drained (they hash into it while none is recorded, until their cache expires).
 */
final class TopologyKeeper implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(TopologyKeeper.class);

    /** The shard count producers hash into while K:meta records none (relay-api's default-shards). */
    static final int PRODUCERS_FALLBACK_SHARDS = DelayRelayProducerProperties.DEFAULT_SHARDS;

    private final Supplier<Collection<BusinessRelay>> relays;
    private final Duration grace;
    private final LongSupplier nanoClock;
    private final EventReporter events;
    /** business -> draining count -> when this instance first saw it (nanos). */
    private final Map<String, Map<Integer, Long>> firstSeen = new HashMap<>();
    /** business -> draining counts found empty at the previous check. */
    private final Map<String, Map<Integer, Boolean>> emptyBefore = new HashMap<>();

    private final long topologyVersion;

    TopologyKeeper(
            Supplier<Collection<BusinessRelay>> relays,
            Duration grace,
            LongSupplier nanoClock,
            EventReporter events,
            long topologyVersion) {
        this.relays = relays;
        this.topologyVersion = topologyVersion;
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
                log.warn("business={}: checking the shard topology failed: {}", spec.name(), Exceptions.rootMessage(e));
            }
        }
    }

    private void keep(BusinessRelay relay, BusinessSpec spec) {
        ShardTopology meta = relay.topology().recordedTopology(spec.keys());
        if (meta == null) {
            // K:meta lost its shard count (a Redis restart without persistence, eviction, a delete): producers hash
            // into their fallback count meanwhile. Written again from this instance's live configuration, with the
            // fallback count drained, so nothing they wrote is left unscanned.
            relay.recordLostTopology(topologyVersion, PRODUCERS_FALLBACK_SHARDS);
            log.warn(
                    "business={}: {} recorded no shard count (lost: Redis restarted without persistence, evicted "
                            + "or deleted it); recorded shards {} again, draining the producers' fallback count {} "
                            + "(relay.producer.default-shards)",
                    spec.name(),
                    spec.keys().meta(),
                    spec.shards(),
                    PRODUCERS_FALLBACK_SHARDS);
            meta = relay.topology().topology(spec.keys(), spec.shards());
        }
        int inForce = meta.shards();
        int[] draining = meta.draining();
        long now = nanoClock.getAsLong();
        Map<Integer, Long> seen = firstSeen.computeIfAbsent(spec.name(), k -> new HashMap<>());
        Map<Integer, Boolean> wasEmpty = emptyBefore.computeIfAbsent(spec.name(), k -> new HashMap<>());
        seen.keySet().retainAll(Arrays.stream(draining).boxed().toList());
        wasEmpty.keySet().retainAll(seen.keySet());
        int[] drained = Arrays.stream(draining)
                .filter(m -> {
                    if (m <= inForce) {
                        return true; // every instance scans at least the count in force: nothing beyond it to drain
                    }
                    long since = seen.computeIfAbsent(m, k -> now);
                    boolean empty = shardsEmpty(relay, spec, inForce, m);
                    boolean retire = empty && Boolean.TRUE.equals(wasEmpty.get(m)) && now - since >= grace.toNanos();
                    wasEmpty.put(m, empty);
                    return retire;
                })
                .toArray();
        if (drained.length > 0) {
            meta = relay.topology().undrain(spec.keys(), inForce, drained);
            log.info(
                    "business={}: shards beyond {} are empty; stopped draining shard count(s) {}",
                    spec.name(),
                    inForce,
                    Arrays.toString(drained));
        }
        relay.state().followTopology(meta);
    }

    private static boolean shardsEmpty(BusinessRelay relay, BusinessSpec spec, int from, int upTo) {
        for (int shard = from; shard < upTo; shard++) {
            if (relay.topology().holdsAnything(spec.keys(), shard)) {
                return false;
            }
        }
        return true;
    }
}
