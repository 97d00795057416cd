package io.delayrelay.app.engine.amqp;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.SequenceInputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.ContentHeaderPropertyWriter;

/**
 * A whole AMQP message kept as one payload: the exchange and routing key to publish it with, its properties in
 * AMQP's own wire encoding, and its body. An AMQP intake stores what publishers sent this way, so the consumer gets
 * every property and header back with its AMQP type.
 *
 * <pre>
 * 0xFF "DRA1" flags u16 exchange-length exchange u16 routing-key-length routing-key u32 properties-length properties body
 * </pre>
 *
 * Flag bit 0: the message id is the entry's id, so it is not stored twice (the properties leave it out).
 */
public final class IntakeEnvelope {

    /** The prefix that marks an envelope: 0xFF (never in UTF-8 text), "DRA1". */
    private static final byte[] MAGIC = {(byte) 0xFF, 'D', 'R', 'A', '1'};

    /** A decoded envelope. */
    public record Message(
            String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body, boolean idIsMessageId) {}

    /** Flag: the message id is the entry's id. */
    private static final int ID_IS_MESSAGE_ID = 1;

    /** Bytes before the exchange name: the prefix and the flags. */
    private static final int HEAD = 6;

    private IntakeEnvelope() {}

    /** Whether the payload is an envelope (starts with its prefix). */
    public static boolean isEnvelope(byte[] payload) {
        if (payload == null || payload.length < MAGIC.length) {
            return false;
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (payload[i] != MAGIC[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * The payload that keeps the message whole. With {@code idIsMessageId} the message id is left out of the stored
     * properties: it is the entry's id, given back by {@link AmqpMessageBuilder} when it publishes.
     */
    public static byte[] encode(
            String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body, boolean idIsMessageId) {
        if (idIsMessageId) {
            properties = properties.builder().messageId(null).build();
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + body.length);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.write(MAGIC);
            out.write(idIsMessageId ? ID_IS_MESSAGE_ID : 0);
            shortString(out, exchange);
            shortString(out, routingKey);
            ByteArrayOutputStream props = new ByteArrayOutputStream(64);
            try (DataOutputStream propsOut = new DataOutputStream(props)) {
                properties.writePropertiesTo(new ContentHeaderPropertyWriter(propsOut));
            }
            out.writeInt(props.size());
            props.writeTo(out);
            out.write(body);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** Decodes an envelope; throws {@link IllegalArgumentException} naming what is wrong when it does not parse. */
    public static Message decode(byte[] payload) {
        if (!isEnvelope(payload)) {
            throw new IllegalArgumentException("not an intake envelope");
        }
        try (DataInputStream in =
                new DataInputStream(new ByteArrayInputStream(payload, MAGIC.length, payload.length))) {
            boolean idIsMessageId = (in.readUnsignedByte() & ID_IS_MESSAGE_ID) != 0;
            String exchange = shortString(in);
            String routingKey = shortString(in);
            int propsLength = in.readInt();
            int propsAt = HEAD + 4 + utf8Length(exchange) + 2 + utf8Length(routingKey) + 2;
            if (propsLength < 2 || propsAt + propsLength > payload.length) {
                throw new IllegalArgumentException("properties length " + propsLength);
            }
            DataInputStream props = new DataInputStream(new ByteArrayInputStream(payload, propsAt, propsLength));
            AMQP.BasicProperties properties = readProperties(props);
            byte[] body = Arrays.copyOfRange(payload, propsAt + propsLength, payload.length);
            return new Message(exchange, routingKey, properties, body, idIsMessageId);
        } catch (IOException e) {
            throw new IllegalArgumentException("truncated intake envelope (" + e + ")", e);
        }
    }

    /**
     * What the console shows of an envelope's first bytes (a preview may be cut): where it goes and, when the
     * properties are whole, the start of its body. Null when not even the names are readable.
     */
    public static Head head(byte[] prefix) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(prefix, HEAD, prefix.length))) {
            String exchange = shortString(in);
            String routingKey = shortString(in);
            int propsLength = in.readInt();
            int bodyAt = HEAD + 4 + utf8Length(exchange) + 2 + utf8Length(routingKey) + 2 + propsLength;
            byte[] body = bodyAt <= prefix.length ? Arrays.copyOfRange(prefix, bodyAt, prefix.length) : new byte[0];
            return new Head(exchange, routingKey, body);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /**
     * Where an envelope's body starts (after the prefix, names and properties): 0 when the payload is not a whole
     * envelope. Lets a cold block keep envelopes' heads and bodies apart, each with its like.
     */
    public static int bodyOffset(byte[] payload) {
        if (!isEnvelope(payload)) {
            return 0;
        }
        int at = HEAD;
        for (int name = 0; name < 2; name++) {
            if (at + 2 > payload.length) {
                return 0;
            }
            at += 2 + (((payload[at] & 0xFF) << 8) | (payload[at + 1] & 0xFF));
        }
        if (at + 4 > payload.length) {
            return 0;
        }
        long props = ((long) (payload[at] & 0xFF) << 24)
                | ((payload[at + 1] & 0xFF) << 16)
                | ((payload[at + 2] & 0xFF) << 8)
                | (payload[at + 3] & 0xFF);
        long body = at + 4L + props;
        return body <= payload.length ? (int) body : 0;
    }

    /** An envelope's destination and the start of its body (empty when the preview ended before it). */
    public record Head(String exchange, String routingKey, byte[] bodyStart) {}

    private static AMQP.BasicProperties readProperties(DataInputStream in) throws IOException {
        // the properties' constructor reads a content header: weight (2 bytes) and body size (8) come first
        return new AMQP.BasicProperties(
                new DataInputStream(new SequenceInputStream(new ByteArrayInputStream(new byte[10]), in)));
    }

    private static void shortString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > 0xFFFF) {
            throw new IllegalArgumentException("name of " + b.length + " bytes");
        }
        out.writeShort(b.length);
        out.write(b);
    }

    private static String shortString(DataInputStream in) throws IOException {
        byte[] b = new byte[in.readUnsignedShort()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static int utf8Length(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
