package io.delayrelay.app.config;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.delayrelay.api.RecurringSchedule;
import io.delayrelay.app.trigger.ConfigProblem;

/**
 * {@code relay.schedules.<name>.*}: a recurring schedule. At each slot of its {@code cron} or {@code every} the relay
 * publishes {@code payload} once, fleet-wide, with the business's exchange, routing key, shape and policies
 * (docs/schedules.md).
 */
public class ScheduleSettings {

    /** Business whose exchange, routing key, shape and policies the schedule's messages get. Required. */
    private String business;

    /** Six fields, seconds first (Spring's CronExpression), in {@code zone}; or use {@code every}. */
    private String cron;

    /** A fixed period (at least 1 s); slots are multiples of it since the epoch. Or use {@code cron}. */
    private Duration every;

    /** Time zone of {@code cron} (an IANA name such as Asia/Shanghai). */
    private String zone = "UTC";

    /** The message body (UTF-8). */
    private String payload = "";

    /** AMQP headers published with each message (not x-delay-*: the relay's own). */
    private Map<String, String> headers = new LinkedHashMap<>();

    /** Slots missed while no relay ran: all (each fires once, oldest first), last (the latest fires), none. */
    private String catchUp = "last";

    /** A paused schedule writes no slot; the slots it passes are counted as skipped. */
    private boolean paused;

    public String getBusiness() {
        return business;
    }

    public void setBusiness(String business) {
        this.business = business;
    }

    public String getCron() {
        return cron;
    }

    public void setCron(String cron) {
        this.cron = cron;
    }

    public Duration getEvery() {
        return every;
    }

    public void setEvery(Duration every) {
        this.every = every;
    }

    public String getZone() {
        return zone;
    }

    public void setZone(String zone) {
        this.zone = zone;
    }

    public String getPayload() {
        return payload;
    }

    public void setPayload(String payload) {
        this.payload = payload;
    }

    public Map<String, String> getHeaders() {
        return headers;
    }

    public void setHeaders(Map<String, String> headers) {
        this.headers = headers;
    }

    public String getCatchUp() {
        return catchUp;
    }

    public void setCatchUp(String catchUp) {
        this.catchUp = catchUp;
    }

    public boolean isPaused() {
        return paused;
    }

    public void setPaused(boolean paused) {
        this.paused = paused;
    }

    /**
     * Adds a problem per bad setting of the schedules, naming schedule, property and value.
     *
     * @param businesses the businesses the relay runs, or null when not known yet (the business is then not checked)
     */
    public static void validate(
            Map<String, ScheduleSettings> schedules, Set<String> businesses, List<ConfigProblem> problems) {
        schedules.forEach((name, s) -> validate("relay.schedules." + name, name, s, businesses, problems));
    }

    /** Adds a problem per bad setting of one schedule; {@code at} prefixes the property names. */
    public static void validate(
            String at, String name, ScheduleSettings s, Set<String> businesses, List<ConfigProblem> problems) {
        if (name == null || !BusinessSpecResolver.NAME.matcher(name).matches()) {
            problems.add(
                    ConfigProblem.global(at, "schedule name '" + name + "': use lowercase letters, digits and '-'"));
            return;
        }
        if (s.business == null || s.business.isBlank()) {
            problems.add(ConfigProblem.global(at + ".business", s.business, "is required"));
        } else if (businesses != null && !businesses.contains(s.business)) {
            problems.add(ConfigProblem.global(
                    at + ".business",
                    s.business,
                    "is not a business of this relay (known: " + sorted(businesses) + ")"));
        }
        boolean hasCron = s.cron != null && !s.cron.isBlank();
        if (hasCron == (s.every != null)) {
            problems.add(ConfigProblem.global(
                    at + ".cron", s.cron, "give exactly one of cron and every (every=" + s.every + ")"));
        } else if (hasCron) {
            add(problems, at + ".cron", s.cron, RecurringSchedule.cronProblem(s.cron));
        } else {
            add(problems, at + ".every", s.every, RecurringSchedule.periodProblem(s.every));
        }
        add(problems, at + ".zone", s.zone, RecurringSchedule.zoneProblem(s.zone));
        add(problems, at + ".catch-up", s.catchUp, RecurringSchedule.catchUpProblem(s.catchUp));
        if (s.payload == null) {
            problems.add(
                    ConfigProblem.global(at + ".payload", null, "must not be null (leave it out for an empty body)"));
        }
        if (s.headers != null) {
            s.headers.forEach((header, value) ->
                    add(problems, at + ".headers." + header, value, RecurringSchedule.headerProblem(header)));
        }
    }

    private static void add(List<ConfigProblem> problems, String property, Object value, String problem) {
        if (problem != null) {
            problems.add(ConfigProblem.global(property, value, problem));
        }
    }

    private static String sorted(Set<String> names) {
        return String.join(", ", new java.util.TreeSet<>(names));
    }
}
