package io.delayrelay.api;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import org.springframework.scheduling.support.CronExpression;

/**
 * A recurring schedule's definition, for {@link RecurringScheduleClient}: when its slots fall (a cron expression in a
 * zone, or a fixed period), the message body, AMQP headers and the catch-up policy (docs/schedules.md). Immutable and
 * validated: each method returns a copy or throws {@link IllegalArgumentException} naming the bad value.
 *
 * <pre>{@code
 * RecurringSchedule.cron("0 0 9 * * MON-FRI").zone("Asia/Shanghai").payload("{\"job\":\"reminders\"}")
 * RecurringSchedule.every(Duration.ofMinutes(5)).payload("reconcile").catchUp("none")
 * }</pre>
 */
public final class RecurringSchedule {

    /** The prefix of the state hash fields that hold a runtime schedule's definition (the key contract). */
    public static final String DEF = "def.";

    /**
     * Every field a definition may have in the state hash (the key contract): replacing a definition clears them all
     * first. The headers are one field, {@code name=value} pairs joined by {@code &}, each part URL-encoded (UTF-8).
     */
    public static final java.util.List<String> DEF_FIELDS = java.util.List.of(
            DEF + "cron", DEF + "zone", DEF + "every", DEF + "payload", DEF + "catch-up", DEF + "headers");

    private static final Set<String> CATCH_UPS = Set.of("all", "last", "none");

    private final String cron;
    private final Duration every;
    private final String zone;
    private final String payload;
    private final Map<String, String> headers;
    private final String catchUp;

    private RecurringSchedule(
            String cron, Duration every, String zone, String payload, Map<String, String> headers, String catchUp) {
        this.cron = cron;
        this.every = every;
        this.zone = zone;
        this.payload = payload;
        this.headers = headers;
        this.catchUp = catchUp;
    }

    /** What is wrong with a cron expression (six fields, seconds first), or null when nothing. */
    public static String cronProblem(String expression) {
        try {
            CronExpression.parse(expression == null ? "" : expression);
            return null;
        } catch (IllegalArgumentException e) {
            return "is not a cron expression of six fields, seconds first (" + e.getMessage() + ")";
        }
    }

    /** What is wrong with a period, or null when nothing. */
    public static String periodProblem(Duration period) {
        if (period == null || period.compareTo(Duration.ofSeconds(1)) < 0) {
            return "must be at least 1s";
        }
        return period.toMillis() * 1_000_000 != period.toNanos() ? "must be whole milliseconds" : null;
    }

    /** What is wrong with a time zone id, or null when nothing. */
    public static String zoneProblem(String zoneId) {
        try {
            ZoneId.of(zoneId == null ? "" : zoneId);
            return null;
        } catch (DateTimeException e) {
            return "is not a time zone (an IANA name such as Asia/Shanghai, or UTC)";
        }
    }

    /** What is wrong with a catch-up policy, or null when nothing. */
    public static String catchUpProblem(String policy) {
        return policy != null && CATCH_UPS.contains(policy.toLowerCase(Locale.ROOT))
                ? null
                : "must be one of all, last, none";
    }

    /** What is wrong with a header name, or null when nothing. */
    public static String headerProblem(String name) {
        return name == null || name.isEmpty() || name.toLowerCase(Locale.ROOT).startsWith("x-delay-")
                ? "is refused: empty, or an x-delay-* header the relay sets itself"
                : null;
    }

    private static void check(String what, Object value, String problem) {
        if (problem != null) {
            throw new IllegalArgumentException(what + " '" + value + "' " + problem);
        }
    }

    /** Slots at the times of a cron expression: six fields, seconds first (Spring's {@code CronExpression}). */
    public static RecurringSchedule cron(String expression) {
        check("cron", expression, cronProblem(expression));
        return new RecurringSchedule(expression.trim(), null, "UTC", "", Map.of(), "last");
    }

    /** Slots every {@code period} (at least 1 s, whole milliseconds), at multiples of it since the epoch. */
    public static RecurringSchedule every(Duration period) {
        check("every", period, periodProblem(period));
        return new RecurringSchedule(null, period, "UTC", "", Map.of(), "last");
    }

    /** The time zone of the cron expression (an IANA name such as Asia/Shanghai); default UTC. */
    public RecurringSchedule zone(String zoneId) {
        check("zone", zoneId, zoneProblem(zoneId));
        return new RecurringSchedule(cron, every, zoneId, payload, headers, catchUp);
    }

    /** The message body (UTF-8); default empty. */
    public RecurringSchedule payload(String body) {
        return new RecurringSchedule(cron, every, zone, Objects.requireNonNull(body, "payload"), headers, catchUp);
    }

    /** An AMQP header published with each message; names starting with {@code x-delay-} are refused. */
    public RecurringSchedule header(String name, String value) {
        check("header", name, headerProblem(name));
        Map<String, String> copy = new LinkedHashMap<>(headers);
        copy.put(name, Objects.requireNonNull(value, () -> "value of header " + name));
        return new RecurringSchedule(cron, every, zone, payload, Collections.unmodifiableMap(copy), catchUp);
    }

    /** What fires of the slots missed while no relay ran: {@code all}, {@code last} (default) or {@code none}. */
    public RecurringSchedule catchUp(String policy) {
        check("catch-up", policy, catchUpProblem(policy));
        return new RecurringSchedule(cron, every, zone, payload, headers, policy.toLowerCase(Locale.ROOT));
    }

    /** The cron expression, or null for a period. */
    public String cronExpression() {
        return cron;
    }

    /** The period, or null for a cron expression. */
    public Duration period() {
        return every;
    }

    public String zoneId() {
        return zone;
    }

    public String payloadText() {
        return payload;
    }

    public Map<String, String> headers() {
        return headers;
    }

    public String catchUpPolicy() {
        return catchUp;
    }

    /** The definition as the state hash's {@code def.*} fields (docs/schedules.md, the key contract). */
    public Map<String, String> fields() {
        Map<String, String> fields = new LinkedHashMap<>();
        if (cron != null) {
            fields.put(DEF + "cron", cron);
            fields.put(DEF + "zone", zone);
        } else {
            fields.put(DEF + "every", Long.toString(every.toMillis()));
        }
        fields.put(DEF + "payload", payload);
        fields.put(DEF + "catch-up", catchUp);
        if (!headers.isEmpty()) {
            StringBuilder encoded = new StringBuilder();
            headers.forEach((k, v) -> encoded.append(encoded.isEmpty() ? "" : "&")
                    .append(URLEncoder.encode(k, StandardCharsets.UTF_8))
                    .append('=')
                    .append(URLEncoder.encode(v, StandardCharsets.UTF_8)));
            fields.put(DEF + "headers", encoded.toString());
        }
        return fields;
    }

    /** A definition read from a state hash's {@code def.*} fields; throws naming the first bad value. */
    public static RecurringSchedule fromFields(Map<String, String> state) {
        RecurringSchedule s;
        String every = state.get(DEF + "every");
        if (state.get(DEF + "cron") != null) {
            s = cron(state.get(DEF + "cron")).zone(state.getOrDefault(DEF + "zone", "UTC"));
        } else if (every != null) {
            try {
                s = every(Duration.ofMillis(Long.parseLong(every)));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("def.every '" + every + "' is not milliseconds");
            }
        } else {
            throw new IllegalArgumentException("neither def.cron nor def.every is set");
        }
        s = s.payload(state.getOrDefault(DEF + "payload", "")).catchUp(state.getOrDefault(DEF + "catch-up", "last"));
        String headers = state.getOrDefault(DEF + "headers", "");
        for (String pair : headers.isEmpty() ? new String[0] : headers.split("&")) {
            int eq = pair.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("def.headers part '" + pair + "' is not name=value");
            }
            s = s.header(
                    URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                    URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        }
        return s;
    }
}
