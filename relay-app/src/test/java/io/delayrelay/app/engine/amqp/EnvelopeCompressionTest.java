package io.delayrelay.app.engine.amqp;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

import com.rabbitmq.client.AMQP;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.core.RedisTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Intake envelopes stored compressed with a dictionary per business, against the real Redis that keeps the
 * dictionaries ({@code K:dicts}).
 */
public class EnvelopeCompressionTest {

    private static final int SAMPLES = 200;

    private final RelayTestKit kit = new RelayTestKit();
    private final RedisTemplate<byte[], byte[]> redis = ByteRedisTemplates.create(kit.redisFactory());

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    /** An envelope as the intake stores one: 100 B JSON order event, three headers, routing key, deliver-to. */
    public static byte[] envelope(int i, Random random) {
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("tenant", "acme");
        headers.put("order", 100_000 + i);
        headers.put("source", "checkout");
        String json = String.format(
                Locale.ROOT,
                "{\"order\":%d,\"customer\":\"c-%07d\",\"amount\":\"%d.%02d\",\"items\":%d,\"at\":%d,\"ref\":\"%08x\"}",
                100_000 + i,
                random.nextInt(10_000_000),
                random.nextInt(2_000),
                random.nextInt(100),
                1 + random.nextInt(9),
                1_764_480_000_000L + random.nextInt(86_400_000),
                random.nextInt());
        return IntakeEnvelope.encode(
                "orders",
                "orders.created",
                new AMQP.BasicProperties.Builder()
                        .contentType("application/json")
                        .deliveryMode(2)
                        .headers(headers)
                        .build(),
                json.getBytes(StandardCharsets.UTF_8),
                true);
    }

    @Test
    void theFirstMessagesAreStoredAsTheyAreThenEveryOneCompressedAndExpandedByteForByte() {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(kit.business("dict"));
        EnvelopeCompression compression = new EnvelopeCompression(redis, SAMPLES);
        Random random = new Random(7);
        for (int i = 0; i < SAMPLES - 1; i++) {
            byte[] envelope = envelope(i, random);
            assertThat(compression.compress(keys, envelope)).isSameAs(envelope);
        }
        assertThat(redis.hasKey(bytes(keys.dictionaries()))).isFalse();

        // the last sample completes the dictionary: it and every later message are stored compressed
        long stored = 0;
        long plain = 0;
        for (int i = SAMPLES - 1; i < SAMPLES + 500; i++) {
            byte[] envelope = envelope(i, random);
            byte[] payload = compression.compress(keys, envelope);
            assertThat(EnvelopeCompression.isCompressed(payload)).isTrue();
            assertThat(compression.expand(keys, payload)).isEqualTo(envelope);
            assertThat(IntakeEnvelope.decode(compression.expand(keys, payload)).routingKey())
                    .isEqualTo("orders.created");
            stored += payload.length;
            plain += envelope.length;
        }
        // the bench's shape: ~215 B envelopes stored in ~50 B (a quarter)
        assertThat(stored / 501.0).isLessThan(plain / 501.0 / 3);
        byte[] current = (byte[]) redis.opsForHash().get(bytes(keys.dictionaries()), bytes("current"));
        byte[] dictionary = (byte[]) redis.opsForHash().get(bytes(keys.dictionaries()), current);
        assertThat(dictionary.length).isBetween(256, EnvelopeCompression.DICTIONARY_BYTES);
        assertThat(new String(current, StandardCharsets.US_ASCII))
                .isEqualTo(HexFormat.of().formatHex(EnvelopeCompression.idOf(dictionary)));

        // a payload that is not a compressed envelope is read as it is
        byte[] envelope = envelope(0, random);
        assertThat(compression.expand(keys, envelope)).isSameAs(envelope);
    }

    @Test
    void anotherInstanceAdoptsTheFirstDictionaryAndReadsWhatTheFirstStored() {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(kit.business("dict"));
        EnvelopeCompression first = new EnvelopeCompression(redis, SAMPLES);
        EnvelopeCompression second = new EnvelopeCompression(redis, SAMPLES);
        Random random = new Random(11);
        // both collect samples before either has a dictionary; the first completes its own first
        for (int i = 0; i < SAMPLES - 1; i++) {
            first.compress(keys, envelope(i, random));
            second.compress(keys, envelope(10_000 + i, random));
        }
        byte[] byFirst = first.compress(keys, envelope(SAMPLES, random));
        byte[] bySecond = second.compress(keys, envelope(SAMPLES + 1, random));
        assertThat(Arrays.copyOfRange(bySecond, 3, 7))
                .as("the second instance trained its own, then adopted the first one's")
                .isEqualTo(Arrays.copyOfRange(byFirst, 3, 7));
        assertThat(redis.opsForHash().size(bytes(keys.dictionaries()))).isEqualTo(2L); // the dictionary and current

        // a third instance, started later, never sampled: it reads the dictionary from Redis, and uses it at once
        EnvelopeCompression third = new EnvelopeCompression(redis, SAMPLES);
        assertThat(third.expand(keys, byFirst)).isEqualTo(first.expand(keys, byFirst));
        EnvelopeCompression fourth = new EnvelopeCompression(redis, SAMPLES);
        assertThat(EnvelopeCompression.isCompressed(fourth.compress(keys, envelope(1, random))))
                .isTrue();
    }

    @Test
    void aDictionaryMissingOrReplacedInRedisIsNamedAndNothingIsReadWrongly() {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(kit.business("dict"));
        EnvelopeCompression compression = new EnvelopeCompression(redis, SAMPLES);
        Random random = new Random(13);
        byte[] payload = null;
        for (int i = 0; i < SAMPLES; i++) {
            payload = compression.compress(keys, envelope(i, random));
        }
        String id = HexFormat.of().formatHex(Arrays.copyOfRange(payload, 3, 7));
        byte[] dictionary = (byte[]) redis.opsForHash().get(bytes(keys.dictionaries()), bytes(id));

        redis.delete(bytes(keys.dictionaries()));
        byte[] stored = payload;
        assertThatThrownBy(() -> new EnvelopeCompression(redis, SAMPLES).expand(keys, stored))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "the dictionary " + id + " of a compressed intake envelope is not in " + keys.dictionaries());

        byte[] other = Arrays.copyOf(dictionary, dictionary.length);
        other[other.length - 1] ^= 1;
        redis.opsForHash().put(bytes(keys.dictionaries()), bytes(id), other);
        assertThatThrownBy(() -> new EnvelopeCompression(redis, SAMPLES).expand(keys, stored))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(
                        "the dictionary stored as " + id + " in " + keys.dictionaries() + " is not that dictionary");

        // the instance that has the dictionary keeps reading; a damaged frame is named
        byte[] damaged = Arrays.copyOf(stored, stored.length - 5);
        assertThatThrownBy(() -> compression.expand(keys, damaged))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("compressed intake envelope")
                .hasMessageContaining(id);
        // a length no intake message has (bytes another program wrote) is refused before anything is allocated
        byte[] huge = Arrays.copyOf(stored, 12);
        System.arraycopy(new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x0F}, 0, huge, 7, 5);
        assertThatThrownBy(() -> compression.expand(keys, huge))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("compressed intake envelope of 4294967295 bytes, more than the 536870912 an intake stores"
                        + " (damaged, or not written by the relay)");
        byte[] cut = Arrays.copyOf(stored, 8);
        cut[7] = (byte) 0x80;
        assertThatThrownBy(() -> compression.expand(keys, cut))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("compressed intake envelope: varint cut short at byte 8");
    }

    @Test
    void aCompressedMessageIsPublishedAsItCameAndOneWhoseDictionaryIsGoneIsDeadLetteredWithTheReason() {
        String business = kit.business("dict");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        BusinessSpec spec = BusinessSpec.builder(business, keys).build();
        EnvelopeCompression compression = new EnvelopeCompression(redis, SAMPLES);
        Random random = new Random(19);
        byte[] envelope = null;
        byte[] stored = null;
        for (int i = 0; i < SAMPLES; i++) {
            envelope = envelope(i, random);
            stored = compression.compress(keys, envelope);
        }
        assertThat(EnvelopeCompression.isCompressed(stored)).isTrue();
        DueMessage due = new DueMessage(
                business, 3, "order-7".getBytes(StandardCharsets.UTF_8), stored, true, 1_000, 1_000, 1, "order-7");
        IntakeEnvelope.Message sent = IntakeEnvelope.decode(envelope);

        // another instance (it never sampled) reads the dictionary from Redis and publishes the message as it came
        AmqpMessageBuilder.Built built =
                new AmqpMessageBuilder(new RedisClock(), new EnvelopeCompression(redis)).build(spec, due);
        assertThat(built.exchange()).isEqualTo("orders");
        assertThat(built.routingKey()).isEqualTo("orders.created");
        assertThat(built.body()).isEqualTo(sent.body());
        assertThat(built.properties().getContentType()).isEqualTo("application/json");
        assertThat(built.properties().getMessageId()).isEqualTo("order-7");
        assertThat(built.properties().getHeaders())
                .containsEntry("order", sent.properties().getHeaders().get("order"));

        // without its dictionary the message cannot be read: the reason the dead set gets names it
        redis.delete(bytes(keys.dictionaries()));
        String id = HexFormat.of().formatHex(Arrays.copyOfRange(stored, 3, 7));
        assertThatThrownBy(
                        () -> new AmqpMessageBuilder(new RedisClock(), new EnvelopeCompression(redis)).build(spec, due))
                .isInstanceOf(AmqpMessageBuilder.InvalidMessageException.class)
                .hasMessage("unreadable intake envelope: the dictionary " + id
                        + " of a compressed intake envelope is not in " + keys.dictionaries());
    }

    @Test
    void aMessageThatDoesNotGetSmallerIsStoredAsItIs() {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(kit.business("dict"));
        EnvelopeCompression compression = new EnvelopeCompression(redis, SAMPLES);
        Random random = new Random(17);
        for (int i = 0; i < SAMPLES; i++) {
            compression.compress(keys, envelope(i, random));
        }
        byte[] noise = new byte[2_000];
        random.nextBytes(noise);
        byte[] envelope = IntakeEnvelope.encode(
                "orders", "orders.created", new AMQP.BasicProperties.Builder().build(), noise, true);
        assertThat(compression.compress(keys, envelope)).isSameAs(envelope);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
