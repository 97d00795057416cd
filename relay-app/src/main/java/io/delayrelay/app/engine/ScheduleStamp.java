package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import io.delayrelay.app.trigger.DueMessage;

/**
 * The stamp a recurring schedule puts on the payload of each slot entry it writes (docs/schedules.md):
 *
 * <pre>
 * 0xFF "DRS1:" slot-epoch-ms ":" schedule-name ":" payload
 * </pre>
 *
 * where {@code payload} is the message, or a contract v2 options envelope ({@link MessageOptions}) when the schedule
 * has headers. The relay publishes the payload and adds {@code x-delay-schedule} and {@code x-delay-slot}. Only the
 * relay writes stamps; a payload that starts with the prefix but does not parse is published whole, as any payload.
 */
public final class ScheduleStamp {

    static final byte[] MAGIC = {(byte) 0xFF, 'D', 'R', 'S', '1', ':'};

    private ScheduleStamp() {}

    /** The stamped payload of schedule {@code name}'s slot {@code slotMs}. */
    public static byte[] stamp(String name, long slotMs, byte[] payload) {
        byte[] head = (slotMs + ":" + name + ":").getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[MAGIC.length + head.length + payload.length];
        System.arraycopy(MAGIC, 0, out, 0, MAGIC.length);
        System.arraycopy(head, 0, out, MAGIC.length, head.length);
        System.arraycopy(payload, 0, out, MAGIC.length + head.length, payload.length);
        return out;
    }

    /** Whether the payload starts with the stamp's prefix. */
    static boolean isStamped(byte[] payload) {
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

    /** A stamped payload read: the slot and the payload under the stamp. */
    record Read(DueMessage.Slot slot, byte[] payload) {}

    /** Reads a stamped payload; null when it does not parse (then it is published whole). */
    static Read read(byte[] stamped) {
        int first = indexOf(stamped, MAGIC.length);
        if (first < 0) {
            return null;
        }
        int second = indexOf(stamped, first + 1);
        if (second < 0 || second == first + 1) {
            return null;
        }
        long slot;
        try {
            slot = Long.parseLong(new String(stamped, MAGIC.length, first - MAGIC.length, StandardCharsets.US_ASCII));
        } catch (NumberFormatException e) {
            return null;
        }
        String name = new String(stamped, first + 1, second - first - 1, StandardCharsets.UTF_8);
        return new Read(new DueMessage.Slot(name, slot), Arrays.copyOfRange(stamped, second + 1, stamped.length));
    }

    /** The next ':' at or after {@code from}, within 200 bytes; -1 when none. */
    private static int indexOf(byte[] in, int from) {
        for (int i = from; i < in.length && i < from + 200; i++) {
            if (in[i] == ':') {
                return i;
            }
        }
        return -1;
    }
}
