package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The edges of the key contract the mutation run (docs/contributing/mutation-testing.md) found untested: braces at
 * either end of a name, the byte form the scripts receive, and key builders equal by source key (businesses are
 * compared by them on reload).
 */
class DelayQueueKeysEdgesTest {

    @Test
    void aBraceAnywhereInANameIsRejectedEvenAtItsFirstCharacter() {
        for (String bad : new String[] {"{orders", "}orders", "orders}", "or{ders"}) {
            assertThatThrownBy(() -> DelayQueueKeys.of(bad))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("was '" + bad + "'");
            assertThatThrownBy(() -> DelayQueueKeys.validateName("business name", bad))
                    .as(bad)
                    .hasMessageStartingWith("business name must not contain '{' or '}'");
        }
        assertThat(DelayQueueKeys.validateName("source key", "o:rders")).isEqualTo("o:rders");
    }

    @Test
    void theBacklogKeyAndShardZeroFollowTheContract() {
        DelayQueueKeys keys = DelayQueueKeys.of("orders:timeout");

        assertThat(keys.backlog()).isEqualTo("orders:timeout:backlog");
        assertThat(keys.shard(0)).isEqualTo("orders:timeout:0");
        assertThat(keys.payloads(0)).isEqualTo("{orders:timeout:0}:payloads");
    }

    @Test
    void aShardsKeyBytesAreTheUtf8FormOfItsKeysInTheDocumentedOrder() {
        DelayQueueKeys keys = DelayQueueKeys.of("zeitplan:größe");

        byte[][] all = keys.shardKeyBytes(2);

        assertThat(all.length).isEqualTo(6);
        assertThat(new String(all[DelayQueueKeys.SHARD], StandardCharsets.UTF_8))
                .isEqualTo("zeitplan:größe:2");
        assertThat(all[DelayQueueKeys.SHARD]).isEqualTo("zeitplan:größe:2".getBytes(StandardCharsets.UTF_8));
        assertThat(all[DelayQueueKeys.PAYLOADS]).isEqualTo(DelayQueueKeys.bytes(keys.payloads(2)));
        assertThat(all[DelayQueueKeys.INFLIGHT]).isEqualTo(DelayQueueKeys.bytes(keys.inflight(2)));
        assertThat(all[DelayQueueKeys.ATTEMPTS]).isEqualTo(DelayQueueKeys.bytes(keys.attempts(2)));
        assertThat(all[DelayQueueKeys.DEAD]).isEqualTo(DelayQueueKeys.bytes(keys.dead(2)));
        assertThat(all[DelayQueueKeys.DEAD_REASONS]).isEqualTo(DelayQueueKeys.bytes(keys.deadReasons(2)));
        assertThat(keys.shardKeyBytes(2)).as("built once, then cached").isSameAs(all);
        assertThat(keys.shardKeyBytes(3)[DelayQueueKeys.SHARD]).isEqualTo(DelayQueueKeys.bytes("zeitplan:größe:3"));
        assertThatThrownBy(() -> keys.shardKeyBytes(-1)).hasMessage("shard must be >= 0, was -1");
    }

    @Test
    void aScriptGetsTheKeysItListsInTheOrderItListsThem() {
        DelayQueueKeys keys = DelayQueueKeys.of("k");

        List<byte[]> picked = keys.shardKeyBytes(1, DelayQueueKeys.INFLIGHT, DelayQueueKeys.SHARD);

        assertThat(picked).hasSize(2);
        assertThat(picked.get(0)).isEqualTo(DelayQueueKeys.bytes("{k:1}:inflight"));
        assertThat(picked.get(1)).isEqualTo(DelayQueueKeys.bytes("k:1"));
        assertThat(keys.shardKeyBytes(1, new int[0])).isEmpty();
    }

    @Test
    void keyBuildersAreEqualExactlyWhenTheirSourceKeysAre() {
        DelayQueueKeys byBusiness = DelayQueueKeys.forBusiness("orders");
        DelayQueueKeys explicit = DelayQueueKeys.of("delayqueue:orders");
        DelayQueueKeys other = DelayQueueKeys.of("delayqueue:orders2");

        assertThat(byBusiness).isEqualTo(explicit).hasSameHashCodeAs(explicit);
        assertThat(byBusiness.hashCode()).isEqualTo("delayqueue:orders".hashCode());
        assertThat(byBusiness).isNotEqualTo(other).isNotEqualTo("delayqueue:orders");
        assertThat(byBusiness.equals(null)).isFalse();
        assertThat(byBusiness).hasToString("DelayQueueKeys[delayqueue:orders]");
    }
}
