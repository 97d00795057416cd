package io.delayrelay.app.support;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;

/** Unsigned LEB128 integers (7 bits a byte, low bits first), as cold blocks and compressed intake messages write them. */
public final class Varints {

    private Varints() {}

    /** Writes {@code value} (treated as unsigned). */
    public static void write(ByteArrayOutputStream out, long value) {
        long v = value;
        while ((v & ~0x7fL) != 0) {
            out.write((int) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    /**
     * Reads one.
     *
     * @throws IllegalArgumentException when it runs past the bytes or over 64 bits (named in the message)
     */
    public static long read(ByteBuffer in) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (!in.hasRemaining()) {
                throw new IllegalArgumentException("varint cut short at byte " + in.position());
            }
            byte b = in.get();
            value |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalArgumentException("varint longer than 64 bits");
    }
}
