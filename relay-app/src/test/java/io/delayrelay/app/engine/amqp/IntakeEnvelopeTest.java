package io.delayrelay.app.engine.amqp;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class IntakeEnvelopeTest {

    @Test
    void aMessageComesBackWithEveryPropertyAndHeaderTypeAndItsBodyByteForByte() {
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("s", "text");
        headers.put("i", 7);
        headers.put("l", 1L << 40);
        headers.put("b", false);
        headers.put("d", new BigDecimal("12.50"));
        headers.put("bytes", new byte[] {0, 1, (byte) 0xFF});
        headers.put("list", List.of(1, "two"));
        headers.put("table", Map.of("k", 3));
        AMQP.BasicProperties sent = new AMQP.BasicProperties.Builder()
                .contentType("text/plain")
                .contentEncoding("gzip")
                .headers(headers)
                .deliveryMode(1)
                .priority(9)
                .correlationId("c")
                .replyTo("r")
                .expiration("1000")
                .messageId("m")
                .timestamp(new Date(1_000_000_000L))
                .type("t")
                .appId("a")
                .clusterId("cl")
                .build();
        byte[] body = {(byte) 0xFF, 'D', 'R', 'A', '1', 0, 42};

        IntakeEnvelope.Message back =
                IntakeEnvelope.decode(IntakeEnvelope.encode("out", "orders.eu", sent, body, false));

        assertThat(back.exchange()).isEqualTo("out");
        assertThat(back.routingKey()).isEqualTo("orders.eu");
        assertThat(back.body()).isEqualTo(body);
        AMQP.BasicProperties p = back.properties();
        assertThat(p.getContentType()).isEqualTo("text/plain");
        assertThat(p.getContentEncoding()).isEqualTo("gzip");
        assertThat(p.getDeliveryMode()).isEqualTo(1);
        assertThat(p.getPriority()).isEqualTo(9);
        assertThat(p.getCorrelationId()).isEqualTo("c");
        assertThat(p.getReplyTo()).isEqualTo("r");
        assertThat(p.getExpiration()).isEqualTo("1000");
        assertThat(p.getMessageId()).isEqualTo("m");
        assertThat(p.getTimestamp()).isEqualTo(new Date(1_000_000_000L));
        assertThat(p.getType()).isEqualTo("t");
        assertThat(p.getAppId()).isEqualTo("a");
        assertThat(p.getClusterId()).isEqualTo("cl");
        Map<String, Object> h = p.getHeaders();
        assertThat(h.get("s")).isInstanceOf(LongString.class).hasToString("text");
        assertThat(h.get("i")).isEqualTo(7);
        assertThat(h.get("l")).isEqualTo(1L << 40);
        assertThat(h.get("b")).isEqualTo(false);
        assertThat(h.get("d")).isEqualTo(new BigDecimal("12.50"));
        assertThat((byte[]) h.get("bytes")).containsExactly(0, 1, (byte) 0xFF);
        assertThat(((List<?>) h.get("list")).get(0)).isEqualTo(1);
        assertThat(((List<?>) h.get("list")).get(1)).hasToString("two");
        assertThat(((Map<?, ?>) h.get("table")).get("k")).isEqualTo(3);
    }

    @Test
    void aMessageIdThatIsTheEntrysIdIsStoredOnce() {
        AMQP.BasicProperties sent = new AMQP.BasicProperties.Builder()
                .messageId("order-42")
                .contentType("application/json")
                .build();
        byte[] once = IntakeEnvelope.encode("out", "k", sent, new byte[] {1}, true);
        byte[] twice = IntakeEnvelope.encode("out", "k", sent, new byte[] {1}, false);

        assertThat(twice.length - once.length).isEqualTo(1 + "order-42".length());
        IntakeEnvelope.Message back = IntakeEnvelope.decode(once);
        assertThat(back.idIsMessageId()).isTrue();
        assertThat(back.properties().getMessageId()).isNull();
        assertThat(back.properties().getContentType()).isEqualTo("application/json");
        assertThat(IntakeEnvelope.decode(twice).idIsMessageId()).isFalse();
        assertThat(IntakeEnvelope.decode(twice).properties().getMessageId()).isEqualTo("order-42");
    }

    @Test
    void aMessageWithoutPropertiesOrBodyRoundTrips() {
        IntakeEnvelope.Message back =
                IntakeEnvelope.decode(IntakeEnvelope.encode("x", "", new AMQP.BasicProperties(), new byte[0], false));
        assertThat(back.routingKey()).isEmpty();
        assertThat(back.body()).isEmpty();
        assertThat(back.properties().getHeaders()).isNull();
        assertThat(back.properties().getMessageId()).isNull();
    }

    @Test
    void onlyPayloadsWithThePrefixAreEnvelopesAndACutOneIsRefusedNamingWhy() {
        byte[] whole = IntakeEnvelope.encode(
                "x",
                "k",
                new AMQP.BasicProperties.Builder().messageId("abc").build(),
                "b".getBytes(StandardCharsets.UTF_8),
                false);
        assertThat(IntakeEnvelope.isEnvelope(whole)).isTrue();
        assertThat(IntakeEnvelope.isEnvelope("{\"json\":1}".getBytes(StandardCharsets.UTF_8)))
                .isFalse();
        assertThat(IntakeEnvelope.isEnvelope(new byte[] {(byte) 0xFF, 'D', 'R', '2', ':'}))
                .isFalse();
        assertThatThrownBy(() -> IntakeEnvelope.decode(Arrays.copyOf(whole, 16)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("properties length");
    }

    @Test
    void theHeadOfACutPreviewNamesWhereTheMessageGoes() {
        byte[] whole = IntakeEnvelope.encode(
                "orders", "eu.cancel", new AMQP.BasicProperties(), "hello".getBytes(StandardCharsets.UTF_8), false);
        IntakeEnvelope.Head head = IntakeEnvelope.head(whole);
        assertThat(head.exchange()).isEqualTo("orders");
        assertThat(head.routingKey()).isEqualTo("eu.cancel");
        assertThat(new String(head.bodyStart(), StandardCharsets.UTF_8)).isEqualTo("hello");
        IntakeEnvelope.Head cut = IntakeEnvelope.head(Arrays.copyOf(whole, 29));
        assertThat(cut.routingKey()).isEqualTo("eu.cancel");
        assertThat(cut.bodyStart()).isEmpty();
    }
}
