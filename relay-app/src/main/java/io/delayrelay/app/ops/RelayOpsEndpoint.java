package io.delayrelay.app.ops;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.BusinessState;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.fleet.FleetPause;
import io.delayrelay.app.fleet.InstanceHeartbeat;
import io.delayrelay.app.fleet.PauseState;
import io.delayrelay.app.fleet.RelayInstance;
import io.delayrelay.app.metrics.Backlog;
import io.delayrelay.app.metrics.BacklogReader;
import io.delayrelay.app.trigger.BusinessSpec;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The {@code relay} actuator endpoint.
 * <pre>
 *   GET    /actuator/relay                          every business: config in force, shards, backlog, paused
 *   GET    /actuator/relay/{business}               one business
 *   GET    /actuator/relay/{business}/peek?limit=N  the next N entries to fall due (default 20)
 *   GET    /actuator/relay/{business}/dead?limit=N  the oldest N dead letters with reason and time (default 100)
 *   POST   /actuator/relay/{business}/pause         stop popping on every instance (in-flight batches finish);
 *                                                   body {"by": "..."} names the operator
 *   POST   /actuator/relay/{business}/resume        lift the operator's pause on every instance
 *   POST   /actuator/relay/{business}/replay        every dead letter back into its shard, due now;
 *                                                   body {"member": "..."} replays one
 *   DELETE /actuator/relay/{business}/dead[?member=...]  purge dead letters (and their payloads)
 * </pre>
 * Writes need the operator token ({@code relay.ops.token}) in the {@value RelayOpsProperties#TOKEN_HEADER} header;
 * without a configured token they are disabled (403). Errors are JSON {@code {"status":..,"error":".."}}.
 */
@Endpoint(id = "relay")
public class RelayOpsEndpoint {

    private static final Logger log = LoggerFactory.getLogger(RelayOpsEndpoint.class);
    static final int DEFAULT_PEEK = 20;
    static final int DEFAULT_DEAD = 100;
    static final int MAX_LIMIT = 10_000;

    private final RelayEngine engine;
    private final BacklogReader backlog;
    private final DeadLetters deadLetters;
    private final RelayOpsProperties properties;
    private final FleetPause fleetPause;
    private final InstanceHeartbeat heartbeat;

    public RelayOpsEndpoint(RelayEngine engine, BacklogReader backlog, DeadLetters deadLetters,
            RelayOpsProperties properties, FleetPause fleetPause, InstanceHeartbeat heartbeat) {
        this.engine = engine;
        this.backlog = backlog;
        this.deadLetters = deadLetters;
        this.properties = properties;
        this.fleetPause = fleetPause;
        this.heartbeat = heartbeat;
    }

    @ReadOperation
    public Map<String, Object> businesses() {
        Map<String, Object> businesses = new LinkedHashMap<>();
        for (BusinessRelay relay : engine.relays().values()) {
            businesses.put(relay.spec().name(), view(relay));
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("running", engine.isRunning());
        body.put("writeEnabled", properties.hasToken());
        body.put("businesses", businesses);
        return body;
    }

    @ReadOperation
    public WebEndpointResponse<Object> business(@Selector String business) {
        BusinessRelay relay = engine.relays().get(business);
        return relay == null ? unknown(business) : ok(view(relay));
    }

    @ReadOperation
    public WebEndpointResponse<Object> read(@Selector String business, @Selector String what,
            @Nullable Integer limit) {
        BusinessRelay relay = engine.relays().get(business);
        if (relay == null) {
            return unknown(business);
        }
        return switch (what) {
            case "peek" -> validLimit(limit) ? ok(deadOrPeek(relay.spec(), "entries", deadLetters.peek(relay.spec(),
                    relay.state().scanWidth(), limit == null ? DEFAULT_PEEK : limit))) : badLimit(limit);
            case "dead" -> validLimit(limit) ? ok(deadOrPeek(relay.spec(), "deadLetters", deadLetters.list(relay.spec(),
                    relay.state().scanWidth(), limit == null ? DEFAULT_DEAD : limit))) : badLimit(limit);
            default -> error(WebEndpointResponse.STATUS_NOT_FOUND,
                    "no such view '" + what + "' of business '" + business + "': use peek or dead");
        };
    }

    @WriteOperation
    public WebEndpointResponse<Object> write(SecurityContext security, @Selector String business,
            @Selector String action, @Nullable String member, @Nullable String by) {
        return asOperator(security, business, relay -> switch (action) {
            case "pause", "resume" -> {
                String who = by == null || by.isBlank() ? "ops endpoint of " + heartbeat.self().id() : by;
                if (action.equals("pause")) {
                    fleetPause.pause(relay, who);
                } else {
                    fleetPause.resume(relay, who);
                }
                yield ok(view(relay));
            }
            case "replay" -> {
                long n = deadLetters.replay(relay.spec(), relay.state().scanWidth(), member);
                log.info("business={}: {} dead letter(s) replayed by the operator", business, n);
                yield ok(result(business, "replayed", n));
            }
            default -> error(WebEndpointResponse.STATUS_NOT_FOUND,
                    "no such action '" + action + "': use pause, resume or replay");
        });
    }

    @DeleteOperation
    public WebEndpointResponse<Object> delete(SecurityContext security, @Selector String business,
            @Selector String what, @Nullable String member) {
        return asOperator(security, business, relay -> {
            if (!what.equals("dead")) {
                return error(WebEndpointResponse.STATUS_NOT_FOUND, "nothing to delete at '" + what + "': use dead");
            }
            long n = deadLetters.purge(relay.spec(), relay.state().scanWidth(), member);
            log.info("business={}: {} dead letter(s) purged by the operator", business, n);
            return ok(result(business, "purged", n));
        });
    }

    /** Runs a write operation on a known business for an operator; refuses (401/403) or answers 404 otherwise. */
    private WebEndpointResponse<Object> asOperator(SecurityContext security, String business,
            java.util.function.Function<BusinessRelay, WebEndpointResponse<Object>> operation) {
        WebEndpointResponse<Object> refused = refuseUnlessOperator(security);
        if (refused != null) {
            return refused;
        }
        BusinessRelay relay = engine.relays().get(business);
        return relay == null ? unknown(business) : operation.apply(relay);
    }

    private WebEndpointResponse<Object> refuseUnlessOperator(SecurityContext security) {
        if (!properties.hasToken()) {
            return error(403, "relay write operations are disabled: set relay.ops.token to enable them");
        }
        if (security == null || !security.isUserInRole(RelayOpsTokenFilter.ROLE)) {
            return error(401, "relay write operations need the operator token in the "
                    + RelayOpsProperties.TOKEN_HEADER + " header");
        }
        return null;
    }

    private Map<String, Object> view(BusinessRelay relay) {
        BusinessSpec spec = relay.spec();
        BusinessState state = relay.state();
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("sourceKey", spec.keys().sourceKey());
        config.put("exchange", spec.exchange());
        config.put("routingKey", spec.routingKey());
        config.put("exchangeType", spec.exchangeType());
        config.put("declareExchange", spec.declareExchange());
        config.put("threads", spec.threads());
        config.put("threadNamePrefix", spec.threadNamePrefix());
        config.put("batchSize", spec.batchSize());
        config.put("batchBytes", spec.batchBytes());
        config.put("maxIdle", spec.maxIdle().toString());
        config.put("lease", spec.lease().toString());
        config.put("maxAttempts", spec.maxAttempts());
        config.put("retryDelay", spec.retryDelay().toString());
        config.put("retryDelayMax", spec.retryDelayMax().toString());
        config.put("publishTimeout", spec.publishTimeout().toString());
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("name", spec.name());
        view.put("running", engine.isRunning());
        PauseState pause = fleetPause.state(relay);
        view.put("paused", state.paused());
        Map<String, Object> pauseView = new LinkedHashMap<>();
        pauseView.put("config", pause.config());
        pauseView.put("operator", state.operatorPaused());
        pauseView.put("by", pause.operator().by());
        pauseView.put("at", pause.operator().at());
        view.put("pause", pauseView);
        view.put("shards", spec.shards());
        view.put("drainShards", state.scanWidth());
        view.put("config", config);
        try {
            Backlog b = backlog.read(spec, state.scanWidth());
            Map<String, Object> figures = new LinkedHashMap<>();
            figures.put("due", b.due());
            figures.put("scheduled", b.scheduled());
            figures.put("inflight", b.inflight());
            figures.put("dead", b.dead());
            figures.put("oldestOverdueMs", b.oldestOverdueMs());
            view.put("backlog", figures);
        } catch (RuntimeException e) {
            view.put("backlog", Map.of("error", "Redis unavailable: " + e.getClass().getSimpleName()));
        }
        try {
            view.put("instances", heartbeat.live(spec.keys()).stream().map(RelayOpsEndpoint::instance).toList());
        } catch (RuntimeException e) {
            view.put("instances", List.of());
        }
        return view;
    }

    private static Map<String, Object> instance(RelayInstance i) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("id", i.id());
        view.put("host", i.host());
        view.put("version", i.version());
        view.put("startedAt", i.startedAt());
        view.put("lastSeen", i.lastSeen());
        return view;
    }

    private static Map<String, Object> deadOrPeek(BusinessSpec spec, String field, List<?> items) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("business", spec.name());
        body.put("count", items.size());
        body.put(field, items);
        return body;
    }

    private static Map<String, Object> result(String business, String what, long n) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("business", business);
        body.put(what, n);
        return body;
    }

    private static boolean validLimit(Integer limit) {
        return limit == null || (limit > 0 && limit <= MAX_LIMIT);
    }

    private static WebEndpointResponse<Object> badLimit(Integer limit) {
        return error(WebEndpointResponse.STATUS_BAD_REQUEST, "limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
    }

    private static WebEndpointResponse<Object> unknown(String business) {
        return error(WebEndpointResponse.STATUS_NOT_FOUND, "unknown business '" + business + "'");
    }

    private static WebEndpointResponse<Object> ok(Object body) {
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
    }

    private static WebEndpointResponse<Object> error(int status, String message) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", status);
        body.put("error", message);
        return new WebEndpointResponse<>(body, status);
    }
}
