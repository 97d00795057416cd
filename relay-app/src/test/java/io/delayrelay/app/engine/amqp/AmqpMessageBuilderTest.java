package io.delayrelay.app.engine.amqp;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.delayrelay.app.trigger.MessageShape;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The relay's message shape, as consumers read it. */
class AmqpMessageBuilderTest {

    private static final long DUE = 1_800_000_000_000L;

    @Test
    void theRelayedAtHeaderNeverPrecedesThePopsRedisTimeWhenTheClockEstimateTrails() {
        RedisClock clock = new RedisClock();
        // the last reading the estimate knows is 5 s older than the pop's own TIME (a reply that took its time)
        clock.observe(DUE - 5_000);
        long poppedAt = DUE + 3;

        AmqpMessageBuilder.Built built = new AmqpMessageBuilder(clock).build(spec(), message(poppedAt));

        assertThat((Long) built.properties().getHeaders().get(RelayHeaders.RELAYED_AT))
                .as("relayed-at (Redis time) of an entry popped at %d, due at %d", poppedAt, DUE)
                .isGreaterThanOrEqualTo(poppedAt);
        assertThat((Long) built.properties().getHeaders().get(RelayHeaders.DUE_AT))
                .isEqualTo(DUE);
    }

    @Test
    void aProducersHeadersArePublishedBesideTheRelaysOwnWhichTheyNeverOverwrite() {
        DueMessage message = new DueMessage(
                "shape",
                2,
                "m".getBytes(),
                "body".getBytes(),
                true,
                DUE,
                DUE + 3,
                1,
                "id-1",
                java.util.Map.of("traceparent", "00-aa-bb-01", RelayHeaders.BUSINESS, "forged"));

        AmqpMessageBuilder.Built built = new AmqpMessageBuilder(new RedisClock()).build(spec(), message);

        assertThat(built.properties().getHeaders())
                .containsEntry("traceparent", "00-aa-bb-01")
                .containsEntry(RelayHeaders.BUSINESS, "shape")
                .containsEntry(RelayHeaders.ID, "m");
        assertThat(built.body()).isEqualTo("body".getBytes());
    }

    private static DueMessage message(long poppedAt) {
        return new DueMessage("shape", 2, "m".getBytes(), "body".getBytes(), false, DUE, poppedAt, 1, "id-1");
    }

    private static BusinessSpec spec() {
        return MessageShapeTest.spec(MessageShape.FULL);
    }
}
