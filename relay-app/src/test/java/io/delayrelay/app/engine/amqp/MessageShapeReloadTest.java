package io.delayrelay.app.engine.amqp;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.config.RelayConfigReloader;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.trigger.MessageShape;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code message-shape} is hot-reloadable like the other per-business settings: a running relay switches a business
 * from full to lean and back, the next messages carry the new shape; an invalid reloaded value is rejected naming
 * business, property and value, and the business keeps its shape.
 */
class MessageShapeReloadTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void aReloadedShapeAppliesToTheNextMessagesAndABadOneIsRejected() throws Exception {
        String business = kit.business("shape-reload");
        String exchange = kit.exchange("shape-reload");
        BlockingQueue<Received> inbox = kit.consume(kit.queue(exchange, "due"));
        ConfigurableApplicationContext relay =
                kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due", "shards", 2));
        RelayConfigReloader reloader = relay.getBean(RelayConfigReloader.class);

        assertThat(deliver(business, inbox, "one").headers()).containsKey(RelayHeaders.DUE_AT);

        reload(relay, business, "lean");
        assertThat(reloader.reload()).isEmpty();
        assertThat(relay.getBean(RelayEngine.class)
                        .relays()
                        .get(business)
                        .spec()
                        .messageShape())
                .isEqualTo(MessageShape.LEAN);
        Received lean = deliver(business, inbox, "two");
        assertThat(lean.headers()).isEmpty();
        assertThat(lean.messageId()).isNotNull();

        reload(relay, business, "thin");
        assertThat(reloader.reload())
                .extracting(p -> p.message())
                .containsExactly("relay.businesses." + business + ".message-shape=thin: must be one of [full, lean]");
        assertThat(deliver(business, inbox, "three").headers())
                .as("the rejected value left the business lean")
                .isEmpty();

        reload(relay, business, "full");
        assertThat(reloader.reload()).isEmpty();
        assertThat(deliver(business, inbox, "four").headers())
                .containsKeys(
                        RelayHeaders.BUSINESS,
                        RelayHeaders.DUE_AT,
                        RelayHeaders.RELAYED_AT,
                        RelayHeaders.SHARD,
                        RelayHeaders.ATTEMPT);
    }

    private static void reload(ConfigurableApplicationContext relay, String business, String shape) {
        Map<String, Object> props = new HashMap<>();
        props.put("relay.businesses." + business + ".message-shape", shape);
        var sources = relay.getEnvironment().getPropertySources();
        sources.remove("reloaded");
        sources.addFirst(new MapPropertySource("reloaded", props));
    }

    private Received deliver(String business, BlockingQueue<Received> inbox, String member) throws Exception {
        kit.producer().scheduleAfter(business, member, Duration.ofMillis(50));
        List<Received> got = RelayTestKit.collect(inbox, 1, Duration.ofSeconds(15), Duration.ofMillis(300));
        assertThat(got).extracting(Received::text).containsExactly(member);
        return got.get(0);
    }
}
