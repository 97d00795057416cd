package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Reading contract v2's options envelope: every v1 payload is a message without options; nothing is ever lost. */
class MessageOptionsTest {

    @Test
    void anEnvelopeGivesItsExpiryHeadersInOrderAndTheMessageByteForByte() {
        byte[] message = {0, (byte) 0xFF, 'x', '\n', ':'};
        MessageOptions o =
                MessageOptions.read(concat(envelope("DR2:1764000000000:2:11:traceparent3:a-b6:tenant5:acmé"), message));
        assertThat(o.problem()).isNull();
        assertThat(o.expiresAtMs()).isEqualTo(1_764_000_000_000L);
        assertThat(o.headers()).containsExactly(Map.entry("traceparent", "a-b"), Map.entry("tenant", "acmé"));
        assertThat(o.message()).isEqualTo(message);
        assertThat(o.refused()).isEmpty();
    }

    @Test
    void aPayloadWithoutTheMarkerIsAMessageWithoutOptions() {
        for (String plain : new String[] {"", "{\"n\":1}", "DR2::0:x", "\u00ffDR2::0:x"}) {
            byte[] bytes = plain.getBytes(StandardCharsets.UTF_8);
            MessageOptions o = MessageOptions.read(bytes);
            assertThat(o.message()).isSameAs(bytes);
            assertThat(o.headers()).isEmpty();
            assertThat(o.expiresAtMs()).isEqualTo(-1);
            assertThat(o.problem()).isNull();
        }
    }

    @Test
    void relayHeadersAreRefusedInAnyCase() {
        MessageOptions o = MessageOptions.read(envelope("DR2::3:14:X-Delay-Due-At1:010:x-delay-id1:x1:a1:bbody"));
        assertThat(o.refused()).containsExactly("X-Delay-Due-At", "x-delay-id");
        assertThat(o.headers()).containsExactly(Map.entry("a", "b"));
        assertThat(o.message()).isEqualTo("body".getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void anUnreadableEnvelopeIsPublishedWholeWithAProblem() {
        for (String broken : new String[] {
            "DR2:", "DR2:x:0:m", "DR2::2:5:ab", "DR2::1:99:name", "DR2::-1:m", "DR2:123456789012345678901234:0:m"
        }) {
            byte[] payload = envelope(broken);
            MessageOptions o = MessageOptions.read(payload);
            assertThat(o.problem()).as(broken).startsWith("unreadable options envelope");
            assertThat(o.message()).isSameAs(payload);
            assertThat(o.headers()).isEmpty();
        }
    }

    private static byte[] envelope(String afterMarker) {
        return concat(new byte[] {(byte) 0xFF}, afterMarker.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = new byte[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
