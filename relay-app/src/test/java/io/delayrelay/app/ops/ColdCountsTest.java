package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.metrics.Backlog;
import io.delayrelay.app.metrics.BacklogReader;
import io.delayrelay.app.ops.WebRelay.Answer;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 27, counts by state: the ops endpoint shows the live entries of the cold tier as their own state
 * ({@code cold}), beside due, scheduled, in flight and dead; a cancelled cold entry leaves the count at once.
 */
class ColdCountsTest {

    private static final long HOUR = 3_600_000L;

    private final RelayTestKit kit = new RelayTestKit();
    private WebRelay relay;

    @AfterEach
    void cleanUp() {
        if (relay != null) {
            relay.close();
        }
        kit.close();
    }

    @Test
    void theOpsEndpointCountsColdEntriesAsTheirOwnState() {
        String business = kit.business("opscold");
        String exchange = kit.exchange("opscold");
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        for (int i = 0; i < 3; i++) {
            producer.schedule(business, "due-" + i, Instant.ofEpochMilli(now - 1_000 - i));
        }
        for (int i = 0; i < 2; i++) {
            producer.schedule(business, "soon-" + i, Instant.ofEpochMilli(now + 10 * 60_000 + i));
        }
        for (int i = 0; i < 40; i++) {
            producer.scheduleById(
                    business,
                    "far-" + i,
                    ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8),
                    Instant.ofEpochMilli(now + 3 * HOUR + i * 1_000L));
        }
        // paused: nothing is delivered; cold-after 1 h: the mover demotes the 40 entries due in 3 h (not the others)
        Map<String, Object> properties = RelayTestKit.business(
                kit.baseProperties(), business, exchange, "due", "paused", true, "cold-after", "1h");
        properties.put("relay.metrics.sample-interval", "100ms");
        relay = new WebRelay(properties);

        await().atMost(Duration.ofSeconds(15))
                .until(() -> backlog(business).get("cold").asLong() == 40);
        JsonNode backlog = backlog(business);
        assertThat(backlog.get("due").asLong()).isEqualTo(3);
        assertThat(backlog.get("scheduled").asLong()).isEqualTo(2);
        assertThat(backlog.get("inflight").asLong()).isZero();
        assertThat(backlog.get("dead").asLong()).isZero();
        assertThat(backlog.get("cold").asLong()).isEqualTo(40);

        assertThat(producer.cancelById(business, "far-7")).isTrue();
        assertThat(producer.cancelById(business, "far-8")).isTrue();
        assertThat(backlog(business).get("cold").asLong())
                .as("a cancelled cold entry leaves the count at once")
                .isEqualTo(38);
        // the fleet's shared sample (K:backlog) carries the cold count too
        await().atMost(Duration.ofSeconds(5))
                .until(() -> relay.get("/actuator/relay")
                                .json()
                                .get("businesses")
                                .get(business)
                                .get("backlog")
                                .get("cold")
                                .asLong()
                        == 38);
    }

    @Test
    void aSharedSampleOfAnInstanceWithoutTheColdCountReadsAsNoColdEntry() {
        String business = kit.business("opscoldold");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        BacklogReader reader = new BacklogReader(ByteRedisTemplates.create(kit.redisFactory()));
        try (RedisConnection c = kit.redis()) {
            c.stringCommands().set(bytes(keys.backlog()), bytes("1 2 3 4 5 6"));
        }
        assertThat(reader.shared(keys)).isEqualTo(new Backlog(1, 2, 3, 4, 0, 5, 6));
        reader.share(keys, new Backlog(1, 2, 3, 4, 7, 5, 6), 60_000);
        assertThat(reader.shared(keys)).isEqualTo(new Backlog(1, 2, 3, 4, 7, 5, 6));
    }

    private JsonNode backlog(String business) {
        Answer answer = relay.get("/actuator/relay/" + business);
        assertThat(answer.status()).isEqualTo(200);
        return answer.json().get("backlog");
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
