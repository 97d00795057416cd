package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.delayrelay.api.MetaFields;
import io.delayrelay.api.internal.ShardTopology;
import io.delayrelay.app.config.BusinessSpecResolver;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.mock.env.MockEnvironment;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 11, defect 10: two relay instances with different shard counts share one business (a rolling update). The
 * shard count in {@code K:meta} and the retirement of a draining count must follow what Redis says, never one
 * instance's own configuration. Drives {@link TopologyStore#reshard} and {@link TopologyKeeper} directly against the real
 * Redis with a settable clock.
 */
class ShardTopologyAcrossInstancesTest {

    private static final Duration GRACE = Duration.ofSeconds(30);
    private static final long OLD_VERSION = 0;
    private static final long NEW_VERSION = 1;
    private static final EventReporter EVENTS = new EventReporter(RelayEvents.NOOP);

    private final RelayTestKit kit = new RelayTestKit();
    private final String business = kit.business("topology");
    private final ShardStore store = new ShardStore(kit.redisFactory());
    private final TopologyStore topology = new TopologyStore(kit.redisFactory());
    private final BusinessSpec oldSpec = spec(business, 16);
    private final BusinessSpec newSpec = spec(business, 8);
    private final AtomicLong nanos = new AtomicLong();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void anInstanceWithAnOlderConfigurationCannotWriteItsShardCountBack() {
        assertThat(topology.reshard(oldSpec, OLD_VERSION).applied()).isTrue();
        ShardTopology rolled = topology.reshard(newSpec, NEW_VERSION);
        assertThat(rolled.applied()).isTrue();
        assertThat(rolled.draining()).containsExactly(16);

        // an old instance restarting mid-rollout (or reloading its old configuration)
        ShardTopology stale = topology.reshard(oldSpec, OLD_VERSION);
        assertThat(stale.applied()).isFalse();
        assertThat(stale.shards()).isEqualTo(8);
        assertThat(stale.scanWidth(16)).isEqualTo(16);
        assertThat(meta(MetaFields.SHARDS)).isEqualTo("8");
        assertThat(meta(MetaFields.DRAINING)).isEqualTo("16");
        assertThat(meta(MetaFields.TOPOLOGY_VERSION)).isEqualTo("1");
    }

    @Test
    void anInstanceConfiguredWithTheDrainingCountDoesNotRetireItWhileItsShardsHoldEntries() {
        topology.reshard(oldSpec, OLD_VERSION);
        topology.reshard(newSpec, NEW_VERSION);
        long due = kit.redisNowMs() + 3_600_000;
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(oldSpec.keys().shard(12)), due, bytes("written under 16 shards"));
        }
        BusinessRelay oldRelay = relay(oldSpec, OLD_VERSION);
        BusinessRelay newRelay = relay(newSpec, NEW_VERSION);
        TopologyKeeper oldKeeper = new TopologyKeeper(() -> List.of(oldRelay), GRACE, nanos::get, EVENTS, OLD_VERSION);
        TopologyKeeper newKeeper = new TopologyKeeper(() -> List.of(newRelay), GRACE, nanos::get, EVENTS, NEW_VERSION);

        for (int i = 0; i < 3; i++) {
            oldKeeper.run();
            newKeeper.run();
            nanos.addAndGet(GRACE.toNanos());
        }
        assertThat(meta(MetaFields.DRAINING))
                .as("shard 12 still holds an entry")
                .isEqualTo("16");
        assertThat(newRelay.state().scanWidth()).isEqualTo(16);

        try (RedisConnection c = kit.redis()) {
            c.keyCommands().del(bytes(oldSpec.keys().shard(12)));
        }
        oldKeeper.run(); // first empty check
        assertThat(meta(MetaFields.DRAINING)).isEqualTo("16");
        nanos.addAndGet(1);
        oldKeeper.run(); // second empty check, past the grace
        assertThat(meta(MetaFields.DRAINING)).isEmpty();
        newKeeper.run();
        assertThat(newRelay.state().scanWidth()).isEqualTo(8);
        assertThat(oldRelay.state().scanWidth())
                .as("the old instance still scans its own count")
                .isEqualTo(16);
    }

    /**
     * Finding 3 of the engine review (2026-11-24): a dead letter of a draining shard keeps its count draining, so
     * that it stays listed, replayable, purgeable, trimmed and counted (all of them go over the scan width); the
     * count retires once the letter is gone (replayed and delivered, purged, trimmed).
     */
    @Test
    void retiringAShardCountNeverStrandsDeadLetters() {
        topology.reshard(oldSpec, OLD_VERSION);
        topology.reshard(newSpec, NEW_VERSION);
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands().zAdd(bytes(oldSpec.keys().dead(12)), kit.redisNowMs(), bytes("died under 16 shards"));
        }
        BusinessRelay newRelay = relay(newSpec, NEW_VERSION);
        TopologyKeeper keeper = new TopologyKeeper(() -> List.of(newRelay), GRACE, nanos::get, EVENTS, NEW_VERSION);

        for (int i = 0; i < 3; i++) {
            keeper.run();
            nanos.addAndGet(GRACE.toNanos());
        }
        assertThat(meta(MetaFields.DRAINING))
                .as("shard 12's dead set holds a letter")
                .isEqualTo("16");
        assertThat(newRelay.state().scanWidth()).isEqualTo(16);

        try (RedisConnection c = kit.redis()) {
            c.keyCommands().del(bytes(oldSpec.keys().dead(12))); // purged
        }
        keeper.run();
        nanos.addAndGet(1);
        keeper.run();
        assertThat(meta(MetaFields.DRAINING)).isEmpty();
        assertThat(newRelay.state().scanWidth()).isEqualTo(8);
    }

    /**
     * Finding 7 of the engine review (2026-11-24): K:meta disappears while the relay runs (a Redis restart without
     * persistence, eviction, a delete). Producers then hash into their fallback count (relay-api's default-shards,
     * 16); the relay records its live count again at its next topology check, and drains the fallback count's
     * shards, so nothing a producer wrote meanwhile is left unscanned.
     */
    @Test
    void aLostMetaIsWrittenAgainFromTheLiveConfigurationAndTheProducersFallbackShardsAreScanned() {
        BusinessRelay relay = relay(newSpec, NEW_VERSION);
        TopologyKeeper keeper = new TopologyKeeper(() -> List.of(relay), GRACE, nanos::get, EVENTS, NEW_VERSION);
        try (RedisConnection c = kit.redis()) {
            c.keyCommands().del(bytes(newSpec.keys().meta()));
            c.zSetCommands().zAdd(bytes(newSpec.keys().shard(12)), kit.redisNowMs(), bytes("hashed into 16 shards"));
        }

        keeper.run();

        assertThat(meta(MetaFields.SHARDS)).isEqualTo("8");
        assertThat(meta(MetaFields.DRAINING)).isEqualTo("16");
        assertThat(meta(MetaFields.TOPOLOGY_VERSION)).isEqualTo("1");
        assertThat(relay.state().scanWidth()).isEqualTo(16);
    }

    /**
     * The same lost K:meta met by a relay that restarts: when a shard beyond its count holds an entry, it drains the
     * producers' fallback count too; a new business (nothing beyond its count) scans its own count only.
     */
    @Test
    void aRelayStartingWithoutMetaScansTheShardsProducersFellBackTo() {
        BusinessRelay fresh = new BusinessRelay(newSpec, store, null, EVENTS, new RedisClock(), ShardDivision.none());
        fresh.adoptTopology(NEW_VERSION, 16);
        assertThat(meta(MetaFields.DRAINING))
                .as("nothing written beyond 8: nothing to drain")
                .isEmpty();
        assertThat(fresh.state().scanWidth()).isEqualTo(8);
        try (RedisConnection c = kit.redis()) {
            c.keyCommands().del(bytes(newSpec.keys().meta()));
            c.zSetCommands().zAdd(bytes(newSpec.keys().shard(12)), kit.redisNowMs(), bytes("hashed into 16 shards"));
        }

        BusinessRelay relay = new BusinessRelay(newSpec, store, null, EVENTS, new RedisClock(), ShardDivision.none());
        relay.adoptTopology(NEW_VERSION, 16);

        assertThat(meta(MetaFields.SHARDS)).isEqualTo("8");
        assertThat(meta(MetaFields.DRAINING)).isEqualTo("16");
        assertThat(relay.state().scanWidth()).isEqualTo(16);
        BusinessRelay again = new BusinessRelay(newSpec, store, null, EVENTS, new RedisClock(), ShardDivision.none());
        again.adoptTopology(NEW_VERSION, 16);
        assertThat(meta(MetaFields.DRAINING))
                .as("a count recorded before is not a fallback: nothing added")
                .isEqualTo("16");
    }

    private BusinessRelay relay(BusinessSpec spec, long topologyVersion) {
        BusinessRelay relay = new BusinessRelay(spec, store, null, EVENTS, new RedisClock(), ShardDivision.none());
        relay.adoptTopology(topologyVersion);
        return relay;
    }

    private String meta(String field) {
        try (RedisConnection c = kit.redis()) {
            byte[] value = c.hashCommands().hGet(bytes(oldSpec.keys().meta()), bytes(field));
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }

    private static BusinessSpec spec(String business, int shards) {
        String prefix = "relay.businesses." + business + ".";
        MockEnvironment env = new MockEnvironment()
                .withProperty(prefix + "exchange", "test.topology")
                .withProperty(prefix + "routing-key", "due")
                .withProperty(prefix + "shards", Integer.toString(shards));
        return BusinessSpecResolver.resolve(env, List.of()).get(0);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
