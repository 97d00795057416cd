package io.delayrelay.app.ops;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import io.delayrelay.app.config.ScheduleSettings;
import io.delayrelay.app.ops.OpsViews.Failure;
import io.delayrelay.app.ops.RelayOpsTokenFilter.Operator;
import io.delayrelay.app.schedule.ScheduleView;
import io.delayrelay.app.schedule.Schedules;
import io.delayrelay.app.schedule.Schedules.UnknownScheduleException;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.convert.DurationStyle;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The recurring schedules part of the {@code relay} endpoint, under {@code /actuator/relay/schedules}:
 * <pre>
 *   GET    /actuator/relay/schedules                    every schedule (open: a view shows no payload)
 *   GET    /actuator/relay/schedules/{name}             one schedule
 *   POST   /actuator/relay/schedules/{name}/create      create or replace a runtime schedule; the body holds the
 *                                                       fields of relay.schedules.&lt;name&gt;.* (catchUp for catch-up)
 *   POST   /actuator/relay/schedules/{name}/pause       pause it fleet-wide (resume, trigger: the same way)
 *   DELETE /actuator/relay/schedules/{name}             delete a runtime schedule
 * </pre>
 * Writes need an operator's token, checked by the endpoint as for every other write. The section's name shadows a
 * business named {@value #SECTION}: that business is then seen only in {@code GET /actuator/relay}.
 */
final class ScheduleOps {

    /** The first path segment after {@code /actuator/relay} of every schedule operation. */
    static final String SECTION = "schedules";

    /** The body fields of {@code create}. */
    static final List<String> CREATE_FIELDS =
            List.of("business", "cron", "every", "zone", "payload", "headers", "catchUp", "paused");

    /** {@code GET /actuator/relay/schedules}. */
    record ScheduleListing(int count, List<ScheduleView> schedules) {}

    /** {@code POST .../{name}/trigger}: the extra message's id ({@code <name>@manual-<ms>}). */
    record Triggered(String schedule, String messageId) {}

    /** {@code DELETE .../{name}}: whether the pending slot entry was taken back before the relay popped it. */
    record Deleted(String schedule, boolean deleted, boolean pendingWithdrawn) {}

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final ObjectProvider<Schedules> schedules;

    ScheduleOps(ObjectProvider<Schedules> schedules) {
        this.schedules = schedules;
    }

    WebEndpointResponse<Object> list() {
        return run(s -> {
            List<ScheduleView> views = s.list();
            return ok(new ScheduleListing(views.size(), views));
        });
    }

    WebEndpointResponse<Object> get(String name) {
        return run(s -> ok(s.get(name)));
    }

    /** One write; the caller has checked the operator's token. */
    WebEndpointResponse<Object> write(String name, String action, Operator operator, Map<String, String> body) {
        boolean create = action.equals("create");
        if (!create) {
            String extra = body.entrySet().stream()
                    .filter(e -> e.getValue() != null)
                    .map(Map.Entry::getKey)
                    .findFirst()
                    .orElse(null);
            if (extra != null) {
                return error(400, "schedule " + action + " takes no field, was given '" + extra + "'");
            }
        }
        return run(s -> switch (action) {
            case "create" -> {
                ScheduleSettings settings = settings(name, body);
                yield ok(s.create(name, settings, operator.toString()));
            }
            case "pause" -> ok(s.pause(name, operator.toString()));
            case "resume" -> ok(s.resume(name, operator.toString()));
            case "trigger" -> ok(new Triggered(name, s.trigger(name, operator.toString())));
            default -> error(
                    404,
                    "no such schedule action '" + action + "': use create, pause, resume or trigger (DELETE deletes)");
        });
    }

    WebEndpointResponse<Object> delete(String name, Operator operator) {
        return run(s -> {
            boolean withdrawn = s.delete(name, operator.toString());
            return ok(new Deleted(name, true, withdrawn));
        });
    }

    /** A write's body fields by name (null: not given), in {@link #CREATE_FIELDS} order. */
    static Map<String, String> body(String... values) {
        Map<String, String> body = new LinkedHashMap<>();
        for (int i = 0; i < CREATE_FIELDS.size(); i++) {
            body.put(CREATE_FIELDS.get(i), values[i]);
        }
        return body;
    }

    /**
     * The settings of a create's body. Actuator hands every field over as text: {@code headers} is the JSON text of
     * the object ({@link RelayOpsRequestCheck} makes it so), {@code paused} is "true" or "false". A value of the
     * wrong kind is a {@link RelayConfigurationException} naming schedule, property and value.
     */
    static ScheduleSettings settings(String name, Map<String, String> body) {
        String at = "schedule " + name;
        List<ConfigProblem> problems = new java.util.ArrayList<>();
        ScheduleSettings s = new ScheduleSettings();
        s.setBusiness(body.get("business"));
        s.setCron(body.get("cron"));
        String every = body.get("every");
        if (every != null) {
            try {
                s.setEvery(DurationStyle.detectAndParse(every.strip()));
            } catch (IllegalArgumentException e) {
                problems.add(ConfigProblem.global(
                        at + ".every", every, "is not a duration (e.g. 1s, 5m, 1h or PT1H; a bare number is ms)"));
            }
        }
        if (body.get("zone") != null) {
            s.setZone(body.get("zone"));
        }
        if (body.get("payload") != null) {
            s.setPayload(body.get("payload"));
        }
        if (body.get("catchUp") != null) {
            s.setCatchUp(body.get("catchUp"));
        }
        String paused = body.get("paused");
        if (paused != null && !paused.equals("false") && !paused.equals("true")) {
            problems.add(ConfigProblem.global(at + ".paused", paused, "is true or false"));
        } else {
            // created paused: an operator's pause from the start, lifted by resume
            s.setPaused("true".equals(paused));
        }
        Object headers = body.get("headers") == null ? null : parse(body.get("headers"));
        if (headers instanceof Map<?, ?> map) {
            Map<String, String> values = new LinkedHashMap<>();
            map.forEach((k, v) -> {
                if (v instanceof Map<?, ?> || v instanceof List<?> || v == null) {
                    problems.add(ConfigProblem.global(at + ".headers." + k, v, "is a text, a number or a boolean"));
                } else {
                    values.put(String.valueOf(k), String.valueOf(v));
                }
            });
            s.setHeaders(values);
        } else if (headers != null) {
            problems.add(ConfigProblem.global(at + ".headers", headers, "is a JSON object of header names to values"));
        }
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
        return s;
    }

    private static @Nullable Object parse(String json) {
        try {
            return JSON.readValue(json, Object.class);
        } catch (JacksonException e) {
            return json;
        }
    }

    /**
     * Runs an operation on the schedules: 404 when this relay has none (no {@link Schedules} bean) or no schedule
     * of that name, 400 naming schedule, property and value of each bad setting, 409 when the schedule cannot be
     * changed so (declared in configuration, another business's).
     */
    private WebEndpointResponse<Object> run(java.util.function.Function<Schedules, WebEndpointResponse<Object>> op) {
        Schedules s = schedules.getIfAvailable();
        if (s == null) {
            return error(404, "recurring schedules are not available on this relay");
        }
        try {
            return op.apply(s);
        } catch (UnknownScheduleException e) {
            return error(404, e.getMessage());
        } catch (RelayConfigurationException e) {
            return error(400, e.problems().stream().map(ConfigProblem::message).collect(Collectors.joining("; ")));
        } catch (IllegalStateException e) {
            return error(409, e.getMessage());
        }
    }

    private static WebEndpointResponse<Object> ok(Object body) {
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
    }

    static WebEndpointResponse<Object> error(int status, String message) {
        return new WebEndpointResponse<>(new Failure(status, message), status);
    }
}
