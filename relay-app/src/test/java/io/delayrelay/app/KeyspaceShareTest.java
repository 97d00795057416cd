package io.delayrelay.app;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.KeyspaceNotifications;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Keyspace notifications follow the fleet's division: each instance SUBSCRIBEs the channels of the shards it pops
 * and no others, so every write is decoded by one instance; when one instance stops, the other subscribes the shards
 * it took over and hears plain ZADDs there. The test runs its own Redis with notify-keyspace-events Kz; max-idle and
 * the safety sweep are 10 minutes, so only a notification can make an entry written after the start-up sweeps arrive.
 */
class KeyspaceShareTest {

    static final int SHARDS = 16;
    static final Duration SEAT_TTL = Duration.ofMillis(1_500);
    /** A notified plain ZADD due now arrives within this on a loaded 2-core box (the target is 20 ms at p99). */
    static final Duration PICK_UP = Duration.ofSeconds(2);

    /** Its own Redis with the notifications on: a relay of another test never sees the setting change. */
    private final PrivateRedis redis = PrivateRedis.start("Kz");

    private final RelayTestKit kit = new RelayTestKit(new TestServices.Endpoint("127.0.0.1", redis.port()));
    private final KeyspaceNotifications notifications = new KeyspaceNotifications(kit);

    @AfterEach
    void cleanUp() {
        kit.close();
        redis.close();
    }

    @Test
    void eachInstanceHearsOnlyItsShardsAndTheSurvivorHearsAllOfThemAfterTheOtherStops() throws Exception {
        String business = kit.business("kshare");
        String exchange = kit.exchange("kshare");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        ConfigurableApplicationContext a = kit.startRelay(properties(business, exchange));
        ConfigurableApplicationContext b = kit.startRelay(properties(business, exchange));
        BusinessRelay relayA = a.getBean(RelayEngine.class).relays().get(business);
        BusinessRelay relayB = b.getBean(RelayEngine.class).relays().get(business);

        await("two live seats, half of the shards each")
                .atMost(Duration.ofSeconds(15))
                .until(() -> relayA.ownedShards().cardinality() == SHARDS / 2
                        && relayB.ownedShards().cardinality() == SHARDS / 2);
        BitSet ofB = relayB.ownedShards();
        BitSet both = (BitSet) ofB.clone();
        both.and(relayA.ownedShards());
        assertThat(both.cardinality()).as("shards both instances pop: %s", both).isZero();
        await("each shard's channel subscribed by exactly one instance")
                .atMost(Duration.ofSeconds(5))
                .until(() -> subscribers(keys).values().stream().allMatch(n -> n == 1));

        // every shard written once, due now: each instance hears its half
        List<String> sent = new ArrayList<>();
        for (int shard = 0; shard < SHARDS; shard++) {
            sent.add(zaddDueNow(keys, shard, "split-" + shard));
        }
        List<Received> first = RelayTestKit.collect(received, SHARDS, Duration.ofSeconds(15), Duration.ofMillis(300));
        assertThat(first).extracting(Received::text).containsExactlyInAnyOrderElementsOf(sent);
        assertPickedUpWithinBound(first);

        // B stops (gives its seat up): A takes its shards at its next renewal and subscribes their channels
        b.close();
        await("A pops every shard")
                .atMost(SEAT_TTL.plus(Duration.ofSeconds(3)))
                .until(() -> relayA.ownedShards().cardinality() == SHARDS);
        await("A hears every shard").atMost(Duration.ofSeconds(3)).until(() -> subscribers(keys).values().stream()
                .allMatch(n -> n == 1));
        int formerlyB = ofB.nextSetBit(0);
        String late = zaddDueNow(keys, formerlyB, "after hand-over");
        List<Received> second = RelayTestKit.collect(received, 1, Duration.ofSeconds(15), Duration.ofMillis(300));
        assertThat(second).extracting(Received::text).containsExactly(late);
        assertPickedUpWithinBound(second);
    }

    private Map<String, Object> properties(String business, String exchange) {
        Map<String, Object> p = RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "shards", SHARDS, "max-idle", "10m");
        p.put("relay.wake.safety-sweep", "10m");
        p.put("relay.division.seat-ttl", SEAT_TTL.toMillis() + "ms");
        return p;
    }

    private String zaddDueNow(DelayQueueKeys keys, int shard, String text) {
        return notifications.zaddDueNow(keys, shard, text);
    }

    private static void assertPickedUpWithinBound(List<Received> all) {
        KeyspaceNotifications.assertPickedUpWithin(all, PICK_UP);
    }

    private Map<Integer, Long> subscribers(DelayQueueKeys keys) {
        return notifications.subscribers(keys, SHARDS);
    }
}
