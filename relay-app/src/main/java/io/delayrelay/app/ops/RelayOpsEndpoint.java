package io.delayrelay.app.ops;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;

import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.fleet.FleetPause;
import io.delayrelay.app.ops.DeadLetters.DeadLetter;
import io.delayrelay.app.ops.DeadLetters.Entry;
import io.delayrelay.app.ops.OpsViews.BusinessView;
import io.delayrelay.app.ops.OpsViews.DeadLetterListing;
import io.delayrelay.app.ops.OpsViews.DeadLetterView;
import io.delayrelay.app.ops.OpsViews.Done;
import io.delayrelay.app.ops.OpsViews.EntryListing;
import io.delayrelay.app.ops.OpsViews.EntryView;
import io.delayrelay.app.ops.OpsViews.Failure;
import io.delayrelay.app.ops.OpsViews.Overview;
import io.delayrelay.app.ops.RelayOpsTokenFilter.Operator;
import io.delayrelay.app.ops.WriteSelection.Refused;
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
 *   GET    /actuator/relay/{business}               one business (its backlog read now)
 *   GET    /actuator/relay/{business}/peek?limit=N[&amp;search=prefix]      operator only
 *                                                   the next N entries to fall due (default 20), or those whose
 *                                                   member (id) starts with the prefix; cold entries included,
 *                                                   marked "cold": true
 *   GET    /actuator/relay/{business}/dead?limit=N[&amp;reason=text]       operator only
 *                                                   the oldest N dead letters with reason, attempts, original due
 *                                                   time and time of death (default 100)
 *   POST   /actuator/relay/{business}/pause         stop popping on every instance; {"by": ".."} adds a note
 *   POST   /actuator/relay/{business}/resume        lift the operator's pause on every instance
 *   POST   /actuator/relay/{business}/replay        dead letters back into their shard, due now: exactly one of
 *                                                   {"member": ".."}, {"members": "..\n.."} (one a line),
 *                                                   {"limit": N} (the oldest N) or {"all": true}
 *   POST   /actuator/relay/{business}/purge         delete dead letters (and their payloads), same selectors
 *   POST   /actuator/relay/{business}/cancel        unschedule entries: {"member": ".."} or {"members": ".."}
 *   POST   /actuator/relay/{business}/deliver-now   make scheduled entries due now: same body
 *   DELETE /actuator/relay/{business}/dead?member=..|?all=true   purge dead letters (and their payloads)
 *   GET, POST, DELETE /actuator/relay/schedules/..   recurring schedules ({@link ScheduleOps})
 * </pre>
 * For producers that {@code ZADD} the message itself, a member <em>is</em> the message body: so listings, like
 * writes, need an operator's token ({@link OperatorTokens}, 401 without; 403 while none is configured), and only
 * the counts of the overview are open. Unknown fields are refused before this class sees them
 * ({@link RelayOpsRequestCheck}); a selector is never implied ({@link WriteSelection}). Each write logs one audit
 * line naming the operator, the origin and the members by reference ({@link AuditRef}). Listings are bounded
 * ({@link ListingBudget}). Errors are JSON {@code {"status":..,"error":".."}}.
 */
@Endpoint(id = "relay")
public class RelayOpsEndpoint {

    private static final Logger log = LoggerFactory.getLogger(RelayOpsEndpoint.class);
    static final int DEFAULT_PEEK = 20;
    static final int DEFAULT_DEAD = 100;
    /** Most entries or dead letters one listing or one "oldest N" write takes. */
    static final int MAX_LIMIT = 1_000;
    /** Longest note a pause may carry ({@code by}); it is stored in K:meta and shown to every operator. */
    static final int MAX_BY = 64;

    private final RelayEngine engine;
    private final DeadLetters deadLetters;
    private final OperatorTokens operators;
    private final ScheduledEntries scheduled;
    private final FleetPause fleetPause;
    private final BusinessViews views;
    private final ScheduleOps schedules;

    RelayOpsEndpoint(
            RelayEngine engine,
            DeadLetters deadLetters,
            OperatorTokens operators,
            ScheduledEntries scheduled,
            FleetPause fleetPause,
            BusinessViews views,
            ScheduleOps schedules) {
        this.engine = engine;
        this.deadLetters = deadLetters;
        this.operators = operators;
        this.scheduled = scheduled;
        this.fleetPause = fleetPause;
        this.views = views;
        this.schedules = schedules;
    }

    @ReadOperation
    public Overview businesses(SecurityContext security) {
        Map<String, BusinessView> businesses = new LinkedHashMap<>();
        for (BusinessRelay relay : engine.relays().values()) {
            businesses.put(relay.spec().name(), views.view(relay, true));
        }
        String operator = security != null && security.getPrincipal() instanceof Operator o ? o.name() : null;
        return new Overview(engine.isRunning(), operators.any(), operator, businesses);
    }

    @ReadOperation
    public WebEndpointResponse<Object> business(@Selector String business) {
        if (business.equals(ScheduleOps.SECTION)) {
            return schedules.list();
        }
        BusinessRelay relay = engine.relays().get(business);
        return relay == null ? unknown(business) : ok(views.view(relay, false));
    }

    @ReadOperation
    public WebEndpointResponse<Object> read(
            SecurityContext security,
            @Selector String business,
            @Selector String what,
            @Nullable Integer limit,
            @Nullable String search,
            @Nullable String reason) {
        if (business.equals(ScheduleOps.SECTION)) {
            return limit != null || search != null || reason != null
                    ? error(400, "a schedule's view takes no parameter")
                    : schedules.get(what);
        }
        return asOperator(security, business, true, relay -> {
            if (limit != null && (limit < 1 || limit > MAX_LIMIT)) {
                return error(400, "limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
            }
            BusinessSpec spec = relay.spec();
            int width = relay.state().scanWidth();
            ListingBudget budget = new ListingBudget();
            return switch (what) {
                case "peek" -> {
                    int n = limit == null ? DEFAULT_PEEK : limit;
                    boolean searching = search != null && !search.isEmpty();
                    ShardMerge.Found<Entry> hot = searching
                            ? scheduled.search(spec, width, search, n, budget)
                            : deadLetters.peek(spec, width, n, budget);
                    ShardMerge.Found<ColdEntries.Cold> cold = searching
                            ? scheduled.cold().search(spec, width, search, n, budget)
                            : scheduled
                                    .cold()
                                    .first(
                                            spec,
                                            width,
                                            n,
                                            hot.items().stream()
                                                    .map(Entry::dueAtMs)
                                                    .toList(),
                                            budget);
                    Map<String, String> previews = scheduled.previews(spec, hot.items(), Entry::shard, Entry::member);
                    List<EntryView> entries = Stream.concat(
                                    hot.items().stream()
                                            .map(e -> EntryView.of(
                                                    e,
                                                    previews.get(ScheduledEntries.previewKey(e.shard(), e.member())))),
                                    cold.items().stream().map(EntryView::of))
                            .sorted(Comparator.comparingLong(EntryView::dueAtMs).thenComparing(EntryView::member))
                            .limit(n)
                            .toList();
                    yield ok(
                            new EntryListing(business, entries.size(), true, hot.partial() || cold.partial(), entries));
                }
                case "dead" -> {
                    ShardMerge.Found<DeadLetter> found =
                            deadLetters.list(spec, width, limit == null ? DEFAULT_DEAD : limit, reason, budget);
                    Map<String, String> previews =
                            scheduled.previews(spec, found.items(), DeadLetter::shard, DeadLetter::member);
                    List<DeadLetterView> dead = found.items().stream()
                            .map(d -> DeadLetterView.of(
                                    d, previews.get(ScheduledEntries.previewKey(d.shard(), d.member()))))
                            .toList();
                    yield ok(new DeadLetterListing(business, dead.size(), true, found.partial(), dead));
                }
                default -> error(404, "no such view '" + what + "' of business '" + business + "': use peek or dead");
            };
        });
    }

    @WriteOperation
    public WebEndpointResponse<Object> write(
            SecurityContext security,
            @Selector String business,
            @Selector String action,
            @Nullable String member,
            @Nullable String members,
            @Nullable Integer limit,
            @Nullable Boolean all,
            @Nullable String by) {
        return asOperator(security, business, false, relay -> {
            BusinessSpec spec = relay.spec();
            int width = relay.state().scanWidth();
            Operator operator = operator(security);
            if (by != null && !action.equals("pause") && !action.equals("resume")) {
                throw new Refused("\"by\" is a note for pause and resume only");
            }
            return switch (action) {
                case "pause", "resume" -> {
                    if (member != null || members != null || limit != null || all != null) {
                        throw new Refused(action + " acts on the whole business: it takes no selector");
                    }
                    if (by != null && by.length() > MAX_BY) {
                        throw new Refused("\"by\" is at most " + MAX_BY + " characters, was " + by.length());
                    }
                    // stored with the pause, shown to every operator: the operator's name, with their note
                    String who =
                            by == null || by.isBlank() ? operator.name() : operator.name() + " (" + by.strip() + ")";
                    if (action.equals("pause")) {
                        fleetPause.pause(relay, who, operator.origin());
                    } else {
                        fleetPause.resume(relay, who, operator.origin());
                    }
                    yield ok(views.view(relay, false)); // FleetPause logs it, naming who and from where
                }
                case "replay", "purge" -> {
                    WriteSelection selection =
                            WriteSelection.deadLetters(action, member, members, limit, all, MAX_LIMIT);
                    boolean replay = action.equals("replay");
                    long n = deadLetters.act(spec, width, selection, replay);
                    log.info(
                            "business={}: {} dead letter(s) {} ({}) by {}",
                            business,
                            n,
                            replay ? "replayed" : "purged",
                            selection.describe(),
                            operator);
                    yield ok(replay ? Done.replayed(business, n) : Done.purged(business, n));
                }
                case "cancel", "deliver-now" -> {
                    WriteSelection selection = WriteSelection.entries(action, member, members, limit, all);
                    boolean cancel = action.equals("cancel");
                    long n = cancel
                            ? scheduled.cancel(spec, width, selection.members())
                            : scheduled.deliverNow(spec, width, selection.members());
                    log.info(
                            "business={}: {} scheduled entr(y/ies) {} ({}) by {}",
                            business,
                            n,
                            cancel ? "cancelled" : "made due now",
                            selection.describe(),
                            operator);
                    yield ok(cancel ? Done.cancelled(business, n) : Done.dueNow(business, n));
                }
                default -> error(
                        404,
                        "no such action '" + action + "': use pause, resume, replay, purge, cancel or deliver-now");
            };
        });
    }

    /**
     * A schedule's write: {@code POST /actuator/relay/schedules/{name}/create|pause|resume|trigger}. The body of
     * {@code create} holds the schedule's settings ({@link ScheduleOps#CREATE_FIELDS}); {@link RelayOpsRequestCheck}
     * refuses any other field, and any field for the other actions. The selectors are not named like a body field:
     * actuator puts the body's fields over the path's variables.
     */
    @WriteOperation
    public WebEndpointResponse<Object> scheduleWrite(
            SecurityContext security,
            @Selector String section,
            @Selector String schedule,
            @Selector String action,
            @Nullable String business,
            @Nullable String cron,
            @Nullable String every,
            @Nullable String zone,
            @Nullable String payload,
            @Nullable String headers,
            @Nullable String catchUp,
            @Nullable String paused) {
        if (!section.equals(ScheduleOps.SECTION)) {
            return error(404, "no such operation: /" + section + "/" + schedule + "/" + action);
        }
        WebEndpointResponse<Object> refused = refusal(security, false);
        if (refused != null) {
            return refused;
        }
        Map<String, String> body = ScheduleOps.body(business, cron, every, zone, payload, headers, catchUp, paused);
        return schedules.write(schedule, action, operator(security), body);
    }

    @DeleteOperation
    public WebEndpointResponse<Object> delete(
            SecurityContext security,
            @Selector String business,
            @Selector String what,
            @Nullable String member,
            @Nullable Boolean all) {
        if (business.equals(ScheduleOps.SECTION)) {
            WebEndpointResponse<Object> refused = refusal(security, false);
            return refused != null
                    ? refused
                    : member != null || all != null
                            ? error(400, "deleting a schedule takes no parameter")
                            : schedules.delete(what, operator(security));
        }
        return asOperator(security, business, false, relay -> {
            if (!what.equals("dead")) {
                return error(404, "nothing to delete at '" + what + "': use dead");
            }
            WriteSelection selection = WriteSelection.deadLetters("purge", member, null, null, all, MAX_LIMIT);
            long n = deadLetters.act(relay.spec(), relay.state().scanWidth(), selection, false);
            log.info(
                    "business={}: {} dead letter(s) purged ({}) by {}",
                    business,
                    n,
                    selection.describe(),
                    operator(security));
            return ok(Done.purged(business, n));
        });
    }

    /**
     * Runs an operation on a known business for an operator: 403 while no operator token is configured, 401 without
     * a right one, 404 for an unknown business, 400 for a {@link Refused} request.
     */
    private WebEndpointResponse<Object> asOperator(
            SecurityContext security,
            String business,
            boolean listing,
            Function<BusinessRelay, WebEndpointResponse<Object>> operation) {
        WebEndpointResponse<Object> refused = refusal(security, listing);
        if (refused != null) {
            return refused;
        }
        BusinessRelay relay = engine.relays().get(business);
        if (relay == null) {
            return unknown(business);
        }
        try {
            return operation.apply(relay);
        } catch (Refused e) {
            return error(400, e.getMessage());
        }
    }

    /** 403 while no operator token is configured, 401 without a right one, else null. */
    private @Nullable WebEndpointResponse<Object> refusal(SecurityContext security, boolean listing) {
        String what = listing ? "relay listings" : "relay write operations";
        if (!operators.any()) {
            return error(
                    403,
                    what + " are disabled" + (listing ? " (they show message bodies)" : "")
                            + ": set relay.ops.token or relay.ops.tokens.<name> to enable them");
        }
        if (security == null || !security.isUserInRole(RelayOpsTokenFilter.ROLE)) {
            return error(
                    401,
                    what + (listing ? " show message bodies and" : "") + " need an operator token in the "
                            + RelayOpsProperties.TOKEN_HEADER + " header");
        }
        return null;
    }

    private static Operator operator(SecurityContext security) {
        return security.getPrincipal() instanceof Operator o ? o : new Operator("an operator", "unknown origin");
    }

    private static WebEndpointResponse<Object> unknown(String business) {
        return error(404, "unknown business '" + business + "'");
    }

    private static WebEndpointResponse<Object> ok(Object body) {
        return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
    }

    private static WebEndpointResponse<Object> error(int status, String message) {
        return new WebEndpointResponse<>(new Failure(status, message), status);
    }
}
