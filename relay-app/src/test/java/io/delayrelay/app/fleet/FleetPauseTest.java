package io.delayrelay.app.fleet;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.app.config.RelayAutoConfiguration;
import io.delayrelay.app.config.RelayConfigReloader;
import io.delayrelay.app.engine.BusinessState;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.core.RedisTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * An operator's pause is followed through the notice on {@code K:wake} (the periodic re-read is only a backstop),
 * also when it is written by hand as docs/operations.md describes; without the notice the re-read picks it up.
 */
class FleetPauseTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    private BusinessState start(String business, String exchange, String recheck) {
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "shards", 2, "threads", 1);
        props.put("relay.fleet.pause-recheck-interval", recheck);
        ConfigurableApplicationContext relay = kit.startRelay(props);
        return relay.getBean(RelayEngine.class).relays().get(business).state();
    }

    private void writeByHand(String business, boolean paused, boolean notify) {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        try (RedisConnection c = kit.redis()) {
            byte[] meta = bytes(keys.meta());
            if (paused) {
                c.hashCommands().hSet(meta, bytes(MetaFields.PAUSED), bytes("1"));
                c.hashCommands().hSet(meta, bytes(MetaFields.PAUSED_BY), bytes("redis-cli"));
            } else {
                c.hashCommands().hDel(meta, bytes(MetaFields.PAUSED), bytes(MetaFields.PAUSED_BY));
            }
            if (notify) {
                c.publish(bytes(keys.wake()), bytes(MetaFields.CHANGED_NOTICE));
            }
        }
    }

    @Test
    void followsAPauseAndAResumeWrittenByHandAtOnceWhenTheNoticeIsPublished() throws Exception {
        String business = kit.business("pausenotice");
        String exchange = kit.exchange("pausenotice");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        // the backstop is an hour away: only the notice can make the relay follow within this test
        BusinessState state = start(business, exchange, "1h");
        assertThat(state.operatorPaused()).isFalse();

        writeByHand(business, true, true);
        await().atMost(Duration.ofSeconds(10)).until(state::operatorPaused);
        kit.producer().scheduleAfter(business, "held", Duration.ZERO);
        assertThat(RelayTestKit.collect(received, 1, Duration.ofMillis(700), Duration.ZERO))
                .isEmpty();

        writeByHand(business, false, true);
        await().atMost(Duration.ofSeconds(10)).until(() -> !state.operatorPaused());
        assertThat(RelayTestKit.collect(received, 1, Duration.ofSeconds(10), Duration.ZERO))
                .extracting(Received::text)
                .containsExactly("held");
    }

    @Test
    void followsAPauseWrittenWithoutTheNoticeAtTheNextRecheck() {
        String business = kit.business("pauserecheck");
        String exchange = kit.exchange("pauserecheck");
        kit.queue(exchange, "due");
        BusinessState state = start(business, exchange, "300ms");

        writeByHand(business, true, false);
        await().atMost(Duration.ofSeconds(10)).until(state::operatorPaused);
        writeByHand(business, false, false);
        await().atMost(Duration.ofSeconds(10)).until(() -> !state.operatorPaused());
    }

    /**
     * Finding 8 of the engine review (2026-11-24): a business added by a reload while an operator's pause holds for
     * it in K:meta (paused for the fleet, e.g. by another instance that runs it) starts paused: its workers do not
     * pop what is due between their start and the pause's next read. Reads of the pause take 300 ms here (a slow
     * Redis round trip), so that a read made beside the workers' start, not before it, would come too late.
     */
    @Test
    void aBusinessAddedByAReloadWhileTheFleetIsPausedStartsPaused() throws Exception {
        String running = kit.business("pauserunning");
        String added = kit.business("pauseadded");
        String exchange = kit.exchange("pauseadded");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "due"));
        Map<String, Object> props =
                RelayTestKit.business(kit.baseProperties(), running, exchange, "due", "shards", 2, "threads", 1);
        props.put("relay.fleet.pause-recheck-interval", "1h");
        ConfigurableApplicationContext relay = kit.startRelay(props, SlowPauseReads.class);
        writeByHand(added, true, false);
        kit.producer().scheduleAfter(added, "held while paused", Duration.ZERO);

        relay.getEnvironment()
                .getPropertySources()
                .addFirst(new MapPropertySource(
                        "reloaded", RelayTestKit.business(new HashMap<>(), added, exchange, "due", "threads", 1)));
        assertThat(relay.getBean(RelayConfigReloader.class).reload()).isEmpty();

        BusinessState state =
                relay.getBean(RelayEngine.class).relays().get(added).state();
        assertThat(state.paused()).as("paused when the reload returns").isTrue();
        assertThat(RelayTestKit.collect(received, 1, Duration.ofMillis(1_500), Duration.ZERO))
                .as("nothing popped while the fleet is paused")
                .isEmpty();
    }

    @Test
    void refusesARecheckIntervalThatIsNotPositive() {
        assertThatThrownBy(() -> new FleetPause(null, null, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("relay.fleet.pause-recheck-interval must be positive, was PT0S");
    }

    /** An operator pause store whose reads take 300 ms. */
    @Configuration(proxyBeanMethods = false)
    static class SlowPauseReads {
        @Bean
        OperatorPauseStore slowOperatorPauseStore(
                @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis) {
            return new OperatorPauseStore(redis) {
                @Override
                public OperatorPause read(DelayQueueKeys keys) {
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return super.read(keys);
                }
            };
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
