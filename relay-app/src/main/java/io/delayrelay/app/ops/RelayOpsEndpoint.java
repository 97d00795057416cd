package io.delayrelay.app.ops;

import java.security.Principal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.BusinessState;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.fleet.FleetPause;
import io.delayrelay.app.fleet.InstanceHeartbeat;
import io.delayrelay.app.fleet.PauseState;
import io.delayrelay.app.fleet.RelayInstance;
import io.delayrelay.app.metrics.Backlog;
import io.delayrelay.app.metrics.BacklogReader;
import io.delayrelay.app.ops.DeadLetters.DeadLetter;
import io.delayrelay.app.ops.DeadLetters.Entry;
import io.delayrelay.app.trigger.BusinessSpec;
import io.micrometer.core.instrument.MeterRegistry;
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
 *   GET    /actuator/relay/{business}/peek?limit=N[&amp;search=prefix]
 *                                                   the next N entries to fall due (default 20), or those whose
 *                                                   member (id) starts with the prefix
 *   GET    /actuator/relay/{business}/dead?limit=N[&amp;reason=text]
 *                                                   the oldest N dead letters with reason, attempts and time of
 *                                                   death (default 100), or those whose reason contains the text
 *   POST   /actuator/relay/{business}/pause         stop popping on every instance (in-flight batches finish);
 *                                                   body {"by": "..."} names the operator
 *   POST   /actuator/relay/{business}/resume        lift the operator's pause on every instance
 *   POST   /actuator/relay/{business}/replay        dead letters back into their shard, due now: body
 *                                                   {"member": ".."}, {"members": "..\n.."} (one a line),
 *                                                   {"limit": N} (the oldest N) or nothing (all)
 *   POST   /actuator/relay/{business}/purge         delete dead letters (and their payloads), same body
 *   POST   /actuator/relay/{business}/cancel        unschedule entries: {"member": ".."} or {"members": ".."}
 *   POST   /actuator/relay/{business}/deliver-now   make scheduled entries due now: same body
 *   DELETE /actuator/relay/{business}/dead[?member=...]  purge dead letters (and their payloads)
 * </pre>
 * Payload previews (of entries scheduled by id) are part of the answers only for requests with the operator token.
 * Writes need the operator token ({@code relay.ops.token}) in the {@value RelayOpsProperties#TOKEN_HEADER} header;
 * without a configured token they are disabled (403). Errors are JSON {@code {"status":..,"error":".."}}.
 * <p>
 * Longer than 300 lines because it still builds its JSON views as maps by hand; they become small view records.
 */
@Endpoint(id = "relay")
public class RelayOpsEndpoint {

    private static final Logger log = LoggerFactory.getLogger(RelayOpsEndpoint.class);
    static final int DEFAULT_PEEK = 20;
    static final int DEFAULT_DEAD = 100;
    static final int MAX_LIMIT = 10_000;
    /** Members named in one write's log line; more are counted. */
    static final int LOGGED_MEMBERS = 5;

    private final RelayEngine engine;
    private final BacklogReader backlog;
    private final DeadLetters deadLetters;
    private final RelayOpsProperties properties;
    private final ScheduledEntries scheduled;
    private final @Nullable LocalThroughput throughput;
    private final FleetPause fleetPause;
    private final InstanceHeartbeat heartbeat;

    public RelayOpsEndpoint(
            RelayEngine engine,
            BacklogReader backlog,
            DeadLetters deadLetters,
            RelayOpsProperties properties,
            ScheduledEntries scheduled,
            @Nullable MeterRegistry meters,
            FleetPause fleetPause,
            InstanceHeartbeat heartbeat) {
        this.engine = engine;
        this.backlog = backlog;
        this.deadLetters = deadLetters;
        this.properties = properties;
        this.scheduled = scheduled;
        this.throughput = meters == null ? null : new LocalThroughput(meters);
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
    public WebEndpointResponse<Object> read(
            SecurityContext security,
            @Selector String business,
            @Selector String what,
            @Nullable Integer limit,
            @Nullable String search,
            @Nullable String reason) {
        BusinessRelay relay = engine.relays().get(business);
        if (relay == null) {
            return unknown(business);
        }
        if (!validLimit(limit)) {
            return badLimit(limit);
        }
        boolean bodies = isOperator(security);
        BusinessSpec spec = relay.spec();
        int width = scanWidth(relay);
        return switch (what) {
            case "peek" -> {
                int n = limit == null ? DEFAULT_PEEK : limit;
                List<Entry> entries = search == null || search.isEmpty()
                        ? deadLetters.peek(spec, width, n)
                        : scheduled.search(spec, width, search, n);
                yield ok(listing(
                        spec,
                        "entries",
                        bodies,
                        entries.stream().map(e -> entryView(e)).toList(),
                        bodies
                                ? previews(
                                        spec,
                                        entries.stream()
                                                .map(e -> Map.entry(e.shard(), e.member()))
                                                .toList())
                                : Map.of()));
            }
            case "dead" -> {
                List<DeadLetter> dead = deadLetters.list(spec, width, limit == null ? DEFAULT_DEAD : limit, reason);
                yield ok(listing(
                        spec,
                        "deadLetters",
                        bodies,
                        dead.stream().map(d -> deadView(d)).toList(),
                        bodies
                                ? previews(
                                        spec,
                                        dead.stream()
                                                .map(d -> Map.entry(d.shard(), d.member()))
                                                .toList())
                                : Map.of()));
            }
            default -> error(
                    WebEndpointResponse.STATUS_NOT_FOUND,
                    "no such view '" + what + "' of business '" + business + "': use peek or dead");
        };
    }

    @WriteOperation
    public WebEndpointResponse<Object> write(
            SecurityContext security,
            @Selector String business,
            @Selector String action,
            @Nullable String member,
            @Nullable String members,
            @Nullable Integer limit,
            @Nullable String by) {
        return asOperator(security, business, relay -> {
            BusinessSpec spec = relay.spec();
            int width = scanWidth(relay);
            String origin = operator(security);
            List<String> named = named(member, members);
            if (!validLimit(limit)) {
                return badLimit(limit);
            }
            return switch (action) {
                case "pause", "resume" -> {
                    // the name stored with a fleet-wide pause: the operator's own, else where the request came from
                    String who = by == null || by.isBlank()
                            ? origin + " via ops endpoint of "
                                    + heartbeat.self().id()
                            : by;
                    if (action.equals("pause")) {
                        fleetPause.pause(relay, who);
                    } else {
                        fleetPause.resume(relay, who);
                    }
                    yield ok(view(relay)); // FleetPause logs it, naming who
                }
                case "replay" -> {
                    long n = named.isEmpty()
                            ? (limit == null
                                    ? deadLetters.replay(spec, width, (String) null)
                                    : deadLetters.replayOldest(spec, width, limit))
                            : deadLetters.replay(spec, width, named);
                    log.info(
                            "business={}: {} dead letter(s) replayed ({}) by {}",
                            business,
                            n,
                            selection(named, limit),
                            origin);
                    yield ok(result(business, "replayed", n));
                }
                case "purge" -> {
                    long n = named.isEmpty()
                            ? (limit == null
                                    ? deadLetters.purge(spec, width, (String) null)
                                    : deadLetters.purgeOldest(spec, width, limit))
                            : deadLetters.purge(spec, width, named);
                    log.info(
                            "business={}: {} dead letter(s) purged ({}) by {}",
                            business,
                            n,
                            selection(named, limit),
                            origin);
                    yield ok(result(business, "purged", n));
                }
                case "cancel", "deliver-now" -> {
                    if (named.isEmpty()) {
                        yield error(
                                WebEndpointResponse.STATUS_BAD_REQUEST,
                                action + " needs \"member\" or \"members\" in the body");
                    }
                    boolean cancel = action.equals("cancel");
                    long n = cancel ? scheduled.cancel(spec, width, named) : scheduled.deliverNow(spec, width, named);
                    log.info(
                            "business={}: {} scheduled entr(y/ies) {} ({}) by {}",
                            business,
                            n,
                            cancel ? "cancelled" : "made due now",
                            selection(named, null),
                            origin);
                    yield ok(result(business, cancel ? "cancelled" : "dueNow", n));
                }
                default -> error(
                        WebEndpointResponse.STATUS_NOT_FOUND,
                        "no such action '" + action + "': use pause, resume, replay, purge, cancel or deliver-now");
            };
        });
    }

    @DeleteOperation
    public WebEndpointResponse<Object> delete(
            SecurityContext security, @Selector String business, @Selector String what, @Nullable String member) {
        return asOperator(security, business, relay -> {
            if (!what.equals("dead")) {
                return error(WebEndpointResponse.STATUS_NOT_FOUND, "nothing to delete at '" + what + "': use dead");
            }
            long n = deadLetters.purge(relay.spec(), scanWidth(relay), member);
            log.info(
                    "business={}: {} dead letter(s) purged ({}) by {}",
                    business,
                    n,
                    selection(named(member, null), null),
                    operator(security));
            return ok(result(business, "purged", n));
        });
    }

    /** Runs a write operation on a known business for an operator; refuses (401/403) or answers 404 otherwise. */
    private WebEndpointResponse<Object> asOperator(
            SecurityContext security, String business, Function<BusinessRelay, WebEndpointResponse<Object>> operation) {
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
        if (!isOperator(security)) {
            return error(
                    401,
                    "relay write operations need the operator token in the " + RelayOpsProperties.TOKEN_HEADER
                            + " header");
        }
        return null;
    }

    /** Shards the relay scans: its shard count, more while retired shards drain. */
    private static int scanWidth(BusinessRelay relay) {
        return relay.state().scanWidth();
    }

    private static boolean isOperator(SecurityContext security) {
        return security != null && security.isUserInRole(RelayOpsTokenFilter.ROLE);
    }

    /** Who did a write, for its log line: the operator's origin (see {@link RelayOpsTokenFilter}). */
    private static String operator(SecurityContext security) {
        Principal principal = security == null ? null : security.getPrincipal();
        return principal == null ? "an operator" : principal.getName();
    }

    /**
     * The member and members of a write's body, without duplicates. {@code members} holds one member per line:
     * actuator reads a write's JSON body as text values, so a JSON array cannot be passed.
     */
    private static List<String> named(@Nullable String member, @Nullable String members) {
        Set<String> named = new LinkedHashSet<>();
        if (member != null) {
            named.add(member);
        }
        if (members != null) {
            members.lines().filter(m -> !m.isEmpty()).forEach(named::add);
        }
        return List.copyOf(named);
    }

    /** What a write chose, for its log line: a few members, the oldest N, or all. */
    private static String selection(List<String> named, @Nullable Integer limit) {
        if (!named.isEmpty()) {
            return named.size() <= LOGGED_MEMBERS
                    ? "members " + named
                    : named.size() + " members, first " + named.subList(0, LOGGED_MEMBERS);
        }
        return limit == null ? "all" : "oldest " + limit;
    }

    private static Map<String, Object> entryView(Entry e) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("shard", e.shard());
        view.put("member", e.member());
        view.put("dueAtMs", e.dueAtMs());
        view.put("dueAt", e.dueAt());
        return view;
    }

    private static Map<String, Object> deadView(DeadLetter d) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("shard", d.shard());
        view.put("member", d.member());
        view.put("reason", d.reason());
        view.put("attempts", DeadLetters.attempts(d.reason()));
        view.put("deadAtMs", d.deadAtMs());
        view.put("deadAt", d.deadAt());
        return view;
    }

    /** Payload previews keyed by {@link ScheduledEntries#previewKey}. */
    private Map<String, String> previews(BusinessSpec spec, List<Map.Entry<Integer, String>> members) {
        Map<Integer, List<String>> byShard = new LinkedHashMap<>();
        members.forEach(
                m -> byShard.computeIfAbsent(m.getKey(), k -> new ArrayList<>()).add(m.getValue()));
        return scheduled.previews(spec, byShard);
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
        if (throughput != null) {
            view.put("local", throughput.read(spec.name()));
        }
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
            view.put(
                    "backlog",
                    Map.of("error", "Redis unavailable: " + e.getClass().getSimpleName()));
        }
        try {
            view.put(
                    "instances",
                    heartbeat.live(spec.keys()).stream()
                            .map(RelayOpsEndpoint::instance)
                            .toList());
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

    /**
     * A listing of entries or dead letters; with {@code bodies} (operator requests) each item carries the
     * {@code payload} preview stored under its member (null for entries whose member is the message).
     */
    private static Map<String, Object> listing(
            BusinessSpec spec,
            String field,
            boolean bodies,
            List<Map<String, Object>> items,
            Map<String, String> previews) {
        if (bodies) {
            items.forEach(
                    i -> i.put("payload", previews.get(ScheduledEntries.previewKey((Integer) i.get("shard"), (String)
                            i.get("member")))));
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("business", spec.name());
        body.put("count", items.size());
        body.put("bodies", bodies);
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
        return error(
                WebEndpointResponse.STATUS_BAD_REQUEST, "limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
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
