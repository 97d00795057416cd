package io.delayrelay.app.intake;

import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads when an intake message is due from its headers, as the delayed-message plugin did: {@code x-delay} in
 * milliseconds after intake (any AMQP integer type, or a string of digits); absent, zero or negative means at once.
 * {@code x-delivery-time} gives an absolute time instead (epoch ms); {@code x-delay} wins when both are present.
 */
final class DelayHeaders {

    static final String DELAY = "x-delay";
    static final String DELIVERY_TIME = "x-delivery-time";

    private static final Pattern INTEGER = Pattern.compile("[+-]?[0-9]{1,19}");

    /** When a message is due. */
    sealed interface Due {}

    /** {@code ms} after Redis time at intake (0 or more). */
    record After(long ms) implements Due {}

    /** At epoch ms {@code at}. */
    record At(long at) implements Due {}

    /** Not readable: the message goes to the dead set with this reason. */
    record Bad(String reason) implements Due {}

    private DelayHeaders() {}

    static Due of(Map<String, Object> headers) {
        Object delay = headers == null ? null : headers.get(DELAY);
        if (delay != null) {
            Long ms = integer(delay);
            if (ms == null) {
                return new Bad(DELAY + " " + describe(delay) + " is not an integer number of milliseconds");
            }
            return new After(Math.max(0, ms));
        }
        Object time = headers == null ? null : headers.get(DELIVERY_TIME);
        if (time != null) {
            Long at = integer(time);
            if (at == null || at < 0) {
                return new Bad(DELIVERY_TIME + " " + describe(time) + " is not an epoch time in milliseconds");
            }
            return new At(at);
        }
        return new After(0);
    }

    /** The value as a long when it is an AMQP integer or a string of digits, else null. */
    private static Long integer(Object value) {
        if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
            return ((Number) value).longValue();
        }
        if (value instanceof CharSequence || value instanceof com.rabbitmq.client.LongString) {
            String text = value.toString().trim();
            if (!INTEGER.matcher(text).matches()) {
                return null;
            }
            try {
                return Long.parseLong(text.startsWith("+") ? text.substring(1) : text);
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return null;
    }

    private static String describe(Object value) {
        String text = String.valueOf(value);
        if (text.length() > 40) {
            text = text.substring(0, 40) + "...";
        }
        String type = value instanceof CharSequence || value instanceof com.rabbitmq.client.LongString
                ? "string"
                : value.getClass().getSimpleName();
        return "'" + text + "' (" + type + ")";
    }
}
