package io.delayrelay.app.schedule;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.delayrelay.api.RecurringSchedule;
import io.delayrelay.app.config.ScheduleSettings;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.springframework.scheduling.support.CronExpression;

/**
 * One recurring schedule, validated: from configuration ({@code relay.schedules.<name>}) or created at runtime (then
 * kept in its state hash in Redis, fields {@code def.*}).
 *
 * @param name       the schedule's name (lowercase letters, digits, '-')
 * @param business   the business whose exchange, routing key, shape and policies its messages get
 * @param recurrence when its slots fall
 * @param payload    the message body
 * @param headers    AMQP headers published with each message
 * @param catchUp    what fires of the slots missed while no relay ran
 * @param paused     paused by its definition (configuration)
 * @param runtime    created at runtime (ops endpoint), not declared in configuration
 */
public record ScheduleDefinition(
        String name,
        String business,
        Recurrence recurrence,
        String payload,
        Map<String, String> headers,
        CatchUp catchUp,
        boolean paused,
        boolean runtime) {

    public ScheduleDefinition {
        headers = Map.copyOf(headers);
    }

    /**
     * A definition from its settings.
     *
     * @throws RelayConfigurationException naming schedule, property and value of every bad setting
     */
    public static ScheduleDefinition of(String at, String name, ScheduleSettings s, boolean runtime) {
        List<ConfigProblem> problems = new ArrayList<>();
        ScheduleSettings.validate(at, name, s, null, problems);
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
        Recurrence recurrence = s.getCron() != null && !s.getCron().isBlank()
                ? new Recurrence.Cron(
                        CronExpression.parse(s.getCron()), s.getCron().trim(), ZoneId.of(s.getZone()))
                : new Recurrence.Every(s.getEvery());
        return new ScheduleDefinition(
                name,
                s.getBusiness(),
                recurrence,
                s.getPayload(),
                s.getHeaders() == null ? Map.of() : new LinkedHashMap<>(s.getHeaders()),
                CatchUp.of(s.getCatchUp()),
                s.isPaused(),
                runtime);
    }

    /** What the payload, headers and timing of its slot messages hang on: a change withdraws a pending future slot. */
    public String fingerprint() {
        StringBuilder text = new StringBuilder(recurrence.describe())
                .append('\n')
                .append(payload)
                .append('\n');
        new TreeMap<>(headers)
                .forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        try {
            byte[] sha =
                    MessageDigest.getInstance("SHA-1").digest(text.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(sha, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The settings this definition came from (for a runtime schedule's state fields and the ops view). */
    public ScheduleSettings settings() {
        ScheduleSettings s = new ScheduleSettings();
        s.setBusiness(business);
        if (recurrence instanceof Recurrence.Cron cron) {
            s.setCron(cron.text());
            s.setZone(cron.zone().getId());
        } else if (recurrence instanceof Recurrence.Every every) {
            s.setEvery(every.period());
        }
        s.setPayload(payload);
        s.setHeaders(new LinkedHashMap<>(headers));
        s.setCatchUp(catchUp.text());
        s.setPaused(paused);
        return s;
    }

    /** A runtime schedule's definition as state hash fields ({@code def.*}, relay-api's contract). */
    Map<String, String> toFields() {
        RecurringSchedule r = recurrence instanceof Recurrence.Cron cron
                ? RecurringSchedule.cron(cron.text()).zone(cron.zone().getId())
                : RecurringSchedule.every(((Recurrence.Every) recurrence).period());
        r = r.payload(payload).catchUp(catchUp.text());
        for (Map.Entry<String, String> h : headers.entrySet()) {
            r = r.header(h.getKey(), h.getValue());
        }
        return r.fields();
    }

    /** A runtime schedule's definition from its state hash; throws naming the bad field when it does not read. */
    static ScheduleDefinition fromFields(String name, String business, Map<String, String> state) {
        RecurringSchedule r = RecurringSchedule.fromFields(state);
        ScheduleSettings s = new ScheduleSettings();
        s.setBusiness(business);
        s.setCron(r.cronExpression());
        s.setEvery(r.period());
        s.setZone(r.zoneId());
        s.setPayload(r.payloadText());
        s.setCatchUp(r.catchUpPolicy());
        s.setHeaders(new LinkedHashMap<>(r.headers()));
        return of("schedule " + name + " (state in Redis)", name, s, true);
    }

    /** The payload as bytes. */
    byte[] payloadBytes() {
        return payload.getBytes(StandardCharsets.UTF_8);
    }
}
