package io.delayrelay.api;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Per-message options of an entry scheduled by id (Redis contract v2, docs/redis-contract.md "Per-message
 * options"): an expiry, and AMQP headers the relay publishes unchanged beside its own {@code x-delay-*} headers.
 * Immutable; each method returns a copy.
 *
 * <pre>{@code
 * producer.scheduleById("order-timeout", "order-1001", json, dueAt,
 *         ScheduleOptions.create().expiresAfterDue(Duration.ofMinutes(5)).header("tenant", "acme"));
 * }</pre>
 *
 * With OpenTelemetry's API on the classpath, the producer adds the current span's W3C {@code traceparent} (and
 * {@code tracestate}) unless these options set them. An entry past its expiry when the relay would publish it goes to
 * the dead set with reason {@code expired} (or is dropped: the business's {@code on-late}).
 */
public final class ScheduleOptions {

    private static final ScheduleOptions EMPTY = new ScheduleOptions(null, null, Map.of());

    private final Instant expiresAt;
    private final Duration expiresAfterDue;
    private final Map<String, String> headers;

    private ScheduleOptions(Instant expiresAt, Duration expiresAfterDue, Map<String, String> headers) {
        this.expiresAt = expiresAt;
        this.expiresAfterDue = expiresAfterDue;
        this.headers = headers;
    }

    /** No expiry, no headers (the current trace context is still added, when there is one). */
    public static ScheduleOptions create() {
        return EMPTY;
    }

    /** Not published after this instant (not before the due time). */
    public ScheduleOptions expiresAt(Instant at) {
        return new ScheduleOptions(Objects.requireNonNull(at, "expiresAt"), null, headers);
    }

    /** Not published later than this long after its due time. */
    public ScheduleOptions expiresAfterDue(Duration window) {
        if (window == null || window.isNegative()) {
            throw new IllegalArgumentException("expiresAfterDue must be zero or positive, was " + window);
        }
        return new ScheduleOptions(null, window, headers);
    }

    /**
     * An AMQP header the relay publishes with the message (a string). Refused: an empty name, and names starting
     * with {@code x-delay-} (any case), which the relay sets itself.
     */
    public ScheduleOptions header(String name, String value) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("header name must not be empty, was '" + name + "'");
        }
        if (name.toLowerCase(Locale.ROOT).startsWith("x-delay-")) {
            throw new IllegalArgumentException(
                    "header " + name + " is refused: the relay sets x-delay-* headers itself (RelayHeaders)");
        }
        Objects.requireNonNull(value, () -> "value of header " + name);
        Map<String, String> copy = new LinkedHashMap<>(headers);
        copy.put(name, value);
        return new ScheduleOptions(expiresAt, expiresAfterDue, Collections.unmodifiableMap(copy));
    }

    /** The headers set, in order. */
    public Map<String, String> headers() {
        return headers;
    }

    /** The expiry as schedule.lua's ARGV[7]: '' none, epoch ms, or '+ms' after the due time. */
    String expiryArgument() {
        if (expiresAt != null) {
            return Long.toString(expiresAt.toEpochMilli());
        }
        if (expiresAfterDue != null) {
            return "+" + expiresAfterDue.toMillis();
        }
        return "";
    }
}
