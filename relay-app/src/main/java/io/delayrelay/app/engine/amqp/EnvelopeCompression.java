package io.delayrelay.app.engine.amqp;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.ZstdDictCompress;
import com.github.luben.zstd.ZstdDictDecompress;
import com.github.luben.zstd.ZstdException;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.LuaScripts;
import io.delayrelay.app.support.Varints;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Intake envelopes stored compressed with a zstd dictionary trained on the business's own messages: an intake
 * message's properties, headers and JSON keys repeat from message to message, so with the dictionary a 214-byte
 * envelope of a 100-byte JSON body is stored in about 50 bytes (docs/amqp-intake.md, "Memory").
 *
 * <p>Per business, the first {@link #SAMPLES} envelopes are stored as they are and kept as samples; from them the
 * relay trains a dictionary of at most {@link #DICTIONARY_BYTES}, stores it in {@code K:dicts} (the first instance's
 * wins: every instance adopts it) and compresses every later envelope with it. A stored message names its dictionary
 * by id, so a dictionary is never changed or removed. Reading a message back ({@link #expand}) fetches a dictionary
 * it has not seen from Redis once.
 *
 * <pre>
 * 0xFF "DZ" id(4: the first bytes of the dictionary's SHA-256) varint(envelope length) zstd frame of the envelope
 * (no magic number, checksum, size or dictionary id: the id and length are in front)
 * </pre>
 */
public final class EnvelopeCompression {

    private static final Logger log = LoggerFactory.getLogger(EnvelopeCompression.class);

    /** Envelopes a business stores as they are before its dictionary is trained from them. */
    public static final int SAMPLES = 200;

    /** Fewest samples a dictionary is trained from. */
    public static final int MIN_SAMPLES = 20;

    /** Largest dictionary trained: 4 KB compressed the bench's envelopes best (16 KB and 64 KB did not do better). */
    static final int DICTIONARY_BYTES = 4_096;

    /** Bytes of an envelope kept as a sample, at most: 200 samples hold at most 800 KB. */
    private static final int SAMPLE_BYTES = 4_096;

    /** zstd level: 3, zstd's default; higher levels made these small frames larger, not smaller. */
    private static final int LEVEL = 3;

    /** Largest envelope read back: more than any message RabbitMQ takes (its default max is 128 MiB). */
    private static final long MAX_ENVELOPE_BYTES = 512L << 20;

    private static final byte[] MAGIC = {(byte) 0xFF, 'D', 'Z'};
    private static final int ID_BYTES = 4;
    private static final byte[] CURRENT = "current".getBytes(StandardCharsets.US_ASCII);

    @SuppressWarnings("rawtypes")
    private static final RedisScript<List> ADOPT =
            LuaScripts.load("io/delayrelay/app/lua/dictionary-adopt.lua", List.class);

    private final RedisTemplate<byte[], byte[]> redis;
    private final int samples;
    /** Per business (by its {@code K:dicts} key): its current dictionary, or the samples toward one. */
    private final Map<String, Learning> learning = new ConcurrentHashMap<>();
    /** Dictionaries seen, by {@code K:dicts} key and hex id. */
    private final Map<String, Dictionary> dictionaries = new ConcurrentHashMap<>();

    private final ThreadLocal<ZstdCompressCtx> compressors = ThreadLocal.withInitial(() -> new ZstdCompressCtx()
            .setLevel(LEVEL)
            .setMagicless(true)
            .setChecksum(false)
            .setContentSize(false)
            .setDictID(false));
    private final ThreadLocal<ZstdDecompressCtx> decompressors =
            ThreadLocal.withInitial(() -> new ZstdDecompressCtx().setMagicless(true));

    public EnvelopeCompression(RedisTemplate<byte[], byte[]> redis) {
        this(redis, SAMPLES);
    }

    /** Trains each business's dictionary from its first {@code samples} envelopes (tests use fewer). */
    public EnvelopeCompression(RedisTemplate<byte[], byte[]> redis, int samples) {
        this.redis = redis;
        this.samples = samples;
    }

    /** A dictionary ready to use: its id, hex id, and zstd's prepared forms. */
    private record Dictionary(byte[] id, String hex, ZstdDictCompress compress, ZstdDictDecompress decompress) {

        static Dictionary of(byte[] bytes) {
            byte[] id = idOf(bytes);
            return new Dictionary(
                    id,
                    HexFormat.of().formatHex(id),
                    new ZstdDictCompress(bytes, LEVEL),
                    new ZstdDictDecompress(bytes));
        }
    }

    /** A business's state: the dictionary it compresses with, or the samples collected toward one. */
    private static final class Learning {
        volatile Dictionary current;
        boolean looked;
        boolean gaveUp;
        final List<byte[]> samples = new ArrayList<>();
    }

    /** Whether a stored payload is a compressed envelope. */
    public static boolean isCompressed(byte[] payload) {
        return payload != null
                && payload.length > MAGIC.length + ID_BYTES
                && payload[0] == MAGIC[0]
                && payload[1] == MAGIC[1]
                && payload[2] == MAGIC[2];
    }

    /**
     * What to store for an intake envelope of the business: the envelope compressed with the business's dictionary,
     * or the envelope itself while there is none yet (this envelope may be the sample that completes it) or when
     * compressing does not make it smaller. Throws what Redis throws while the dictionary is stored.
     */
    public byte[] compress(DelayQueueKeys keys, byte[] envelope) {
        Learning l = learning.computeIfAbsent(keys.dictionaries(), k -> new Learning());
        Dictionary d = l.current;
        if (d == null) {
            d = learn(keys, l, envelope);
            if (d == null) {
                return envelope;
            }
        }
        byte[] frame;
        ZstdCompressCtx ctx = compressors.get();
        ctx.loadDict(d.compress());
        frame = ctx.compress(envelope);
        ByteArrayOutputStream out = new ByteArrayOutputStream(MAGIC.length + ID_BYTES + 3 + frame.length);
        out.writeBytes(MAGIC);
        out.writeBytes(d.id());
        Varints.write(out, envelope.length);
        out.writeBytes(frame);
        return out.size() < envelope.length ? out.toByteArray() : envelope;
    }

    /**
     * The envelope a stored payload holds: the payload itself unless {@link #isCompressed}. Throws
     * {@link IllegalArgumentException} naming the problem when it cannot be read (its dictionary is not in
     * {@code K:dicts}, or the bytes are damaged).
     */
    public byte[] expand(DelayQueueKeys keys, byte[] payload) {
        if (!isCompressed(payload)) {
            return payload;
        }
        byte[] id = Arrays.copyOfRange(payload, MAGIC.length, MAGIC.length + ID_BYTES);
        ByteBuffer in = ByteBuffer.wrap(payload, MAGIC.length + ID_BYTES, payload.length - MAGIC.length - ID_BYTES);
        long length;
        try {
            length = Varints.read(in);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("compressed intake envelope: " + e.getMessage(), e);
        }
        if (length < 0 || length > MAX_ENVELOPE_BYTES) {
            throw new IllegalArgumentException("compressed intake envelope of " + length + " bytes, more than the "
                    + MAX_ENVELOPE_BYTES + " an intake stores (damaged, or not written by the relay)");
        }
        Dictionary d = dictionary(keys, id);
        ZstdDecompressCtx ctx = decompressors.get();
        ctx.loadDict(d.decompress());
        try {
            byte[] envelope = ctx.decompress(payload, in.position(), in.remaining(), (int) length);
            if (envelope.length != length) {
                throw new IllegalArgumentException("compressed intake envelope of " + envelope.length + " bytes, "
                        + length + " expected (dictionary " + d.hex() + ")");
            }
            return envelope;
        } catch (ZstdException e) {
            throw new IllegalArgumentException(
                    "damaged compressed intake envelope (dictionary " + d.hex() + "): " + e.getMessage(), e);
        }
    }

    /** The business's current dictionary once learned: looked up in Redis first, else trained from samples. */
    private Dictionary learn(DelayQueueKeys keys, Learning l, byte[] envelope) {
        synchronized (l) {
            if (l.current != null) {
                return l.current;
            }
            if (!l.looked) {
                l.looked = true;
                byte[] current = (byte[]) redis.opsForHash().get(bytes(keys.dictionaries()), CURRENT);
                if (current != null) {
                    Object stored = redis.opsForHash().get(bytes(keys.dictionaries()), current);
                    if (stored instanceof byte[] b
                            && HexFormat.of().formatHex(idOf(b)).equals(text(current))) {
                        return adopted(keys, l, b, false);
                    }
                }
            }
            if (l.gaveUp) {
                return null;
            }
            // a sample's start is what repeats (properties, headers, the body's first keys): 4 KB of each at most
            l.samples.add(envelope.length <= SAMPLE_BYTES ? envelope : Arrays.copyOf(envelope, SAMPLE_BYTES));
            if (l.samples.size() < samples) {
                return null;
            }
            byte[][] taken = l.samples.toArray(new byte[0][]);
            l.samples.clear();
            byte[] buffer = new byte[DICTIONARY_BYTES];
            long size = Zstd.trainFromBuffer(taken, buffer);
            if (Zstd.isError(size)) {
                l.gaveUp = true;
                log.warn(
                        "dictionaries={}: training a dictionary from {} intake messages failed ({}); this instance"
                                + " stores the business's intake messages uncompressed until it restarts",
                        keys.dictionaries(),
                        taken.length,
                        Zstd.getErrorName(size));
                return null;
            }
            byte[] trained = Arrays.copyOf(buffer, (int) size);
            List<?> reply = redis.execute(
                    ADOPT,
                    List.of(bytes(keys.dictionaries())),
                    bytes(HexFormat.of().formatHex(idOf(trained))),
                    trained);
            byte[] adopted = (byte[]) reply.get(1);
            Dictionary d = adopted(keys, l, adopted, Arrays.equals(adopted, trained));
            log.info(
                    "dictionaries={}: {} dictionary {} ({} bytes); intake messages are stored compressed from now on"
                            + " ({} sample messages of {} bytes on average)",
                    keys.dictionaries(),
                    Arrays.equals(adopted, trained) ? "trained" : "adopted another instance's",
                    d.hex(),
                    adopted.length,
                    taken.length,
                    Arrays.stream(taken).mapToLong(b -> b.length).sum() / taken.length);
            return d;
        }
    }

    private Dictionary adopted(DelayQueueKeys keys, Learning l, byte[] bytes, boolean ours) {
        Dictionary d = Dictionary.of(bytes);
        dictionaries.putIfAbsent(keys.dictionaries() + "/" + d.hex(), d);
        l.current = d;
        l.samples.clear();
        if (!ours) {
            log.debug("dictionaries={}: using dictionary {}", keys.dictionaries(), d.hex());
        }
        return d;
    }

    /** The dictionary of that id: seen before, or read from {@code K:dicts} (and checked against its id). */
    private Dictionary dictionary(DelayQueueKeys keys, byte[] id) {
        String hex = HexFormat.of().formatHex(id);
        String key = keys.dictionaries() + "/" + hex;
        Dictionary d = dictionaries.get(key);
        if (d != null) {
            return d;
        }
        Object stored = redis.opsForHash().get(bytes(keys.dictionaries()), bytes(hex));
        if (!(stored instanceof byte[] b)) {
            throw new IllegalArgumentException(
                    "the dictionary " + hex + " of a compressed intake envelope is not in " + keys.dictionaries());
        }
        if (!Arrays.equals(idOf(b), id)) {
            throw new IllegalArgumentException("the dictionary stored as " + hex + " in " + keys.dictionaries()
                    + " is not that dictionary (its id is " + HexFormat.of().formatHex(idOf(b)) + ")");
        }
        return dictionaries.computeIfAbsent(key, k -> Dictionary.of(b));
    }

    /** A dictionary's id: the first 4 bytes of its SHA-256. */
    static byte[] idOf(byte[] dictionary) {
        try {
            return Arrays.copyOf(MessageDigest.getInstance("SHA-256").digest(dictionary), ID_BYTES);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
