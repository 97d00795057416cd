package io.delayrelay.app.engine.cold;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import com.github.luben.zstd.Zstd;
import com.rabbitmq.client.AMQP;
import io.delayrelay.app.engine.amqp.EnvelopeCompressionTest;
import io.delayrelay.app.engine.amqp.IntakeEnvelope;
import io.delayrelay.app.support.Varints;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The cold block's own encoding (no Redis involved: a block is bytes the relay writes and reads): every kind of
 * payload comes back byte for byte, and blocks an older relay wrote (format 1) are still read.
 */
class ColdBlockTest {

    @Test
    void envelopesPlainPayloadsAndMembersWithoutOneComeBackByteForByteInDueOrder() {
        Random random = new Random(5);
        List<ColdBlock.Entry> entries = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            byte[] payload =
                    switch (i % 5) {
                        case 0 -> EnvelopeCompressionTest.envelope(i, random); // an intake envelope
                        case 1 -> ("{\"order\":" + i + "}").getBytes(StandardCharsets.UTF_8);
                        case 2 -> null; // scheduled by message: the member is the message
                        case 3 -> new byte[0];
                        default -> {
                            // looks like an envelope but is cut: kept whole as a plain payload
                            byte[] envelope = EnvelopeCompressionTest.envelope(i, random);
                            yield java.util.Arrays.copyOf(envelope, 20);
                        }
                    };
            entries.add(new ColdBlock.Entry(
                    ("m-" + i).getBytes(StandardCharsets.UTF_8), 1_000_000L + (i * 7919L) % 300, payload));
        }
        // an envelope with an empty body, and one of an empty routing key
        entries.add(new ColdBlock.Entry(
                "empty-body".getBytes(StandardCharsets.UTF_8),
                5,
                IntakeEnvelope.encode("ex", "rk", new AMQP.BasicProperties(), new byte[0], true)));
        entries.add(new ColdBlock.Entry(
                "empty-key".getBytes(StandardCharsets.UTF_8),
                5,
                IntakeEnvelope.encode("ex", "", new AMQP.BasicProperties(), new byte[] {1, 2}, false)));

        byte[] block = ColdBlock.encode(entries);
        assertThat(block[0]).isEqualTo(ColdBlock.FORMAT);
        List<ColdBlock.Entry> back = ColdBlock.decode(block);

        List<ColdBlock.Entry> expected = new ArrayList<>(entries);
        expected.sort(java.util.Comparator.comparingLong(ColdBlock.Entry::dueMs));
        assertThat(back).hasSize(expected.size());
        for (int i = 0; i < back.size(); i++) {
            assertThat(back.get(i).member()).isEqualTo(expected.get(i).member());
            assertThat(back.get(i).dueMs()).isEqualTo(expected.get(i).dueMs());
            assertThat(back.get(i).payload()).isEqualTo(expected.get(i).payload());
        }
    }

    @Test
    void aBlockOfFormatOneAsAnOlderRelayWroteItIsStillRead() {
        Random random = new Random(9);
        byte[] envelope = EnvelopeCompressionTest.envelope(1, random);
        byte[] json = "{\"order\":7}".getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        // n = 3, first due 1000, deltas 0 5 9; members a b c; payloads: envelope, none, json
        raw.writeBytes(new byte[] {3, (byte) 0xE8, 0x07, 0, 5, 9});
        for (String m : List.of("a", "b", "c")) {
            raw.write(1);
            raw.write(m.charAt(0));
        }
        Varints.write(raw, envelope.length + 1L);
        raw.writeBytes(envelope);
        raw.write(0);
        Varints.write(raw, json.length + 1L);
        raw.writeBytes(json);
        byte[] plain = raw.toByteArray();
        ByteArrayOutputStream block = new ByteArrayOutputStream();
        block.write(1);
        Varints.write(block, plain.length);
        block.writeBytes(Zstd.compress(plain, 3));

        List<ColdBlock.Entry> back = ColdBlock.decode(block.toByteArray());
        assertThat(back)
                .extracting(e -> new String(e.member(), StandardCharsets.UTF_8))
                .containsExactly("a", "b", "c");
        assertThat(back).extracting(ColdBlock.Entry::dueMs).containsExactly(1000L, 1005L, 1009L);
        assertThat(back.get(0).payload()).isEqualTo(envelope);
        assertThat(back.get(1).payload()).isNull();
        assertThat(back.get(2).payload()).isEqualTo(json);
    }

    @Test
    void bytesOfAnotherFormatAreRefusedByName() {
        assertThatThrownBy(() -> ColdBlock.decode(new byte[] {3, 0, 0}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("not a cold block of format 1 or 2 (3 bytes)");
    }

    @Test
    void anEnvelopesBodyStartsAfterItsNamesAndProperties() {
        byte[] body = {9, 8, 7};
        byte[] envelope = IntakeEnvelope.encode(
                "orders",
                "orders.created",
                new AMQP.BasicProperties.Builder().type("t").build(),
                body,
                false);
        int at = IntakeEnvelope.bodyOffset(envelope);
        assertThat(java.util.Arrays.copyOfRange(envelope, at, envelope.length)).isEqualTo(body);
        assertThat(IntakeEnvelope.bodyOffset("{\"a\":1}".getBytes(StandardCharsets.UTF_8)))
                .isZero();
        assertThat(IntakeEnvelope.bodyOffset(java.util.Arrays.copyOf(envelope, envelope.length - 4)))
                .as("cut inside its properties")
                .isZero();
    }
}
