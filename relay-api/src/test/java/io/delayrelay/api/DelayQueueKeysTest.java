package io.delayrelay.api;

import java.util.stream.IntStream;

import io.lettuce.core.cluster.SlotHash;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DelayQueueKeysTest {

    @Test
    void buildsEveryKeyOfTheContract() {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness("order-cancel");
        assertThat(keys.sourceKey()).isEqualTo("delayqueue:order-cancel");
        assertThat(keys.shard(3)).isEqualTo("delayqueue:order-cancel:3");
        assertThat(keys.payloads(3)).isEqualTo("{delayqueue:order-cancel:3}:payloads");
        assertThat(keys.inflight(3)).isEqualTo("{delayqueue:order-cancel:3}:inflight");
        assertThat(keys.attempts(3)).isEqualTo("{delayqueue:order-cancel:3}:attempts");
        assertThat(keys.dead(3)).isEqualTo("{delayqueue:order-cancel:3}:dead");
        assertThat(keys.deadReasons(3)).isEqualTo("{delayqueue:order-cancel:3}:dead-reasons");
        assertThat(keys.meta()).isEqualTo("delayqueue:order-cancel:meta");
        assertThat(keys.cursor()).isEqualTo("delayqueue:order-cancel:cursor");
        assertThat(keys.wake()).isEqualTo("delayqueue:order-cancel:wake");
        assertThat(keys.instances()).isEqualTo("delayqueue:order-cancel:instances");
    }

    @Test
    void everyKeyOfAShardHashesToTheShardsClusterSlot() {
        DelayQueueKeys keys = DelayQueueKeys.of("orders:timeout");
        for (int shard = 0; shard < 64; shard++) {
            int slot = SlotHash.getSlot(keys.shard(shard));
            for (String key : new String[] {
                keys.payloads(shard),
                keys.inflight(shard),
                keys.attempts(shard),
                keys.dead(shard),
                keys.deadReasons(shard)
            }) {
                assertThat(SlotHash.getSlot(key)).as(key).isEqualTo(slot);
            }
        }
    }

    @Test
    void shardsSpreadOverManySlots() {
        DelayQueueKeys keys = DelayQueueKeys.of("orders:timeout");
        long distinct = IntStream.range(0, 16)
                .map(i -> SlotHash.getSlot(keys.shard(i)))
                .distinct()
                .count();
        assertThat(distinct).isEqualTo(16);
    }

    @Test
    void rejectsBracesAndEmptyNamesNamingTheValue() {
        assertThatThrownBy(() -> DelayQueueKeys.of("orders{x}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "source key must not contain '{' or '}' (they decide the Redis Cluster slot), was 'orders{x}'");
        assertThatThrownBy(() -> DelayQueueKeys.forBusiness(" "))
                .hasMessage("business name must not be empty, was ' '");
        assertThatThrownBy(() -> DelayQueueKeys.forBusiness(null))
                .hasMessage("business name must not be empty, was 'null'");
        assertThatThrownBy(() -> DelayQueueKeys.of("k").shard(-1)).hasMessage("shard must be >= 0, was -1");
    }
}
