package io.delayrelay.app.schedule;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import io.delayrelay.app.config.ScheduleSettings;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What operators do with recurring schedules (the ops endpoint and the console): list them with their next fire
 * times, create one at runtime, pause, resume, trigger now, delete. State lives in Redis: every instance sees it.
 */
public class Schedules {

    private static final Logger log = LoggerFactory.getLogger(Schedules.class);

    /** How many next fire times a view lists. */
    static final int NEXT_SHOWN = 5;

    private final ScheduleStore store;
    private final ScheduleTicker ticker;
    private final ScheduleMetrics metrics;
    private final RedisClock clock;
    private final Supplier<Collection<BusinessSpec>> businesses;

    public Schedules(
            ScheduleStore store,
            ScheduleTicker ticker,
            ScheduleMetrics metrics,
            RedisClock clock,
            Supplier<Collection<BusinessSpec>> businesses) {
        this.store = store;
        this.ticker = ticker;
        this.metrics = metrics;
        this.clock = clock;
        this.businesses = businesses;
    }

    /** Every schedule of every business this relay runs, by business then name. */
    public List<ScheduleView> list() {
        List<ScheduleView> views = new ArrayList<>();
        for (BusinessSpec spec : sorted()) {
            Map<String, ScheduleDefinition> declared = ticker.configured().getOrDefault(spec.name(), Map.of());
            Set<String> names = new java.util.TreeSet<>(store.ticks(spec.keys()).keySet());
            names.addAll(declared.keySet());
            for (String name : names) {
                views.add(view(spec, name, declared.get(name)));
            }
        }
        return views;
    }

    /** One schedule; throws {@link UnknownScheduleException} when no business of this relay has it. */
    public ScheduleView get(String name) {
        BusinessSpec spec = businessOf(name);
        return view(
                spec,
                name,
                ticker.configured().getOrDefault(spec.name(), Map.of()).get(name));
    }

    private ScheduleView view(BusinessSpec spec, String name, ScheduleDefinition declared) {
        Map<String, String> state = store.state(spec.keys(), name);
        ScheduleDefinition def = declared;
        if (def == null && "runtime".equals(state.get("origin"))) {
            try {
                def = ScheduleDefinition.fromFields(name, spec.name(), state);
            } catch (RuntimeException e) {
                def = null;
            }
        }
        String pausedBy = state.get("paused-by");
        String status = def == null ? "not-declared-here" : def.paused() || pausedBy != null ? "paused" : "active";
        List<Long> next = new ArrayList<>();
        long now = clock.nowMs();
        if (def != null && !"paused".equals(status)) {
            long at = Math.max(now, parse(state.get("cursor"), now));
            String pending = state.getOrDefault("pending", "");
            if (!pending.isEmpty() && ScheduleTender.slotOf(pending) > now) {
                next.add(ScheduleTender.slotOf(pending));
                at = ScheduleTender.slotOf(pending);
            }
            while (next.size() < NEXT_SHOWN) {
                Recurrence.Next n = def.recurrence().next(at);
                if (n == null) {
                    break;
                }
                next.add(n.slotMs());
                at = n.slotMs();
            }
        }
        // the last slot written that is due by now: the last written, or the one before it while that is ahead
        Long lastSlot = null;
        String lastDelivery = null;
        long last = parse(state.get("last"), -1);
        if (last > now) {
            last = parse(state.get("before-last"), -1);
        }
        if (last >= 0) {
            lastSlot = last;
            lastDelivery = store.whereIs(spec.keys(), SlotPlan.idOf(name, last));
        }
        Map<String, Long> skipped = new TreeMap<>();
        state.forEach((k, v) -> {
            if (k.startsWith("skipped.")) {
                skipped.put(k.substring("skipped.".length()), Long.parseLong(v));
            }
        });
        return new ScheduleView(
                name,
                spec.name(),
                def != null ? (def.runtime() ? "runtime" : "config") : state.getOrDefault("origin", "config"),
                def == null ? null : def.recurrence().describe(),
                status,
                pausedBy,
                def == null ? null : def.catchUp().text(),
                next,
                lastSlot,
                lastDelivery,
                parse(state.get("written"), 0),
                skipped);
    }

    /**
     * Creates (or replaces) a runtime schedule; its first slot is the first after now.
     *
     * @throws RelayConfigurationException naming each bad property and value
     * @throws IllegalStateException       when the name is a schedule declared in configuration, or another
     *                                     business's
     */
    public ScheduleView create(String name, ScheduleSettings settings, String operator) {
        List<ConfigProblem> problems = new ArrayList<>();
        Set<String> names = sorted().stream().map(BusinessSpec::name).collect(Collectors.toSet());
        ScheduleSettings.validate("schedule " + name, name, settings, names, problems);
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
        ScheduleDefinition def = ScheduleDefinition.of("schedule " + name, name, settings, true);
        for (BusinessSpec spec : sorted()) {
            if (ticker.configured().getOrDefault(spec.name(), Map.of()).containsKey(name)) {
                throw new IllegalStateException("schedule " + name + " is declared in configuration (relay.schedules."
                        + name + "): change it there");
            }
            if (!spec.name().equals(def.business()) && store.ticks(spec.keys()).containsKey(name)) {
                throw new IllegalStateException(
                        "schedule " + name + " exists for business " + spec.name() + ": delete it first");
            }
        }
        BusinessSpec spec = sorted().stream()
                .filter(s -> s.name().equals(def.business()))
                .findFirst()
                .orElseThrow();
        Map<String, String> fields = new LinkedHashMap<>(def.toFields());
        fields.put("created-by", operator);
        if (settings.isPaused()) {
            // created paused: an operator's pause from the start, lifted by resume
            fields.put("paused-by", operator);
        }
        if (!store.define(spec.keys(), name, fields)) {
            throw new IllegalStateException("schedule " + name + " is declared in configuration: change it there");
        }
        log.info(
                "schedule {}: created at runtime by {}: business {}, {}",
                name,
                operator,
                def.business(),
                def.recurrence().describe());
        ticker.wake(spec.name());
        return view(spec, name, null);
    }

    /** Pauses a schedule fleet-wide: no slot is written until resumed; slots passed meanwhile count as skipped. */
    public ScheduleView pause(String name, String operator) {
        BusinessSpec spec = businessOf(name);
        store.request(spec.keys(), name, "paused-by", operator);
        log.info("schedule {}: paused by {}", name, operator);
        ticker.wake(spec.name());
        return get(name);
    }

    /** Resumes a schedule paused with {@link #pause}: from its next slot; the slots passed meanwhile stay skipped. */
    public ScheduleView resume(String name, String operator) {
        BusinessSpec spec = businessOf(name);
        store.request(spec.keys(), name, "paused-by", "");
        log.info("schedule {}: resumed by {}", name, operator);
        ticker.wake(spec.name());
        return get(name);
    }

    /**
     * Fires one extra message now, with its own id ({@code <name>@manual-<ms>}), besides the schedule's slots.
     *
     * @return the extra message's id
     */
    public String trigger(String name, String operator) {
        BusinessSpec spec = businessOf(name);
        ScheduleView view = get(name);
        ScheduleDefinition def =
                ticker.configured().getOrDefault(spec.name(), Map.of()).get(name);
        if (def == null) {
            def = ScheduleDefinition.fromFields(name, spec.name(), store.state(spec.keys(), name));
        }
        long now = clock.nowMs();
        String id = name + "@manual-" + now;
        store.writeExtra(spec.keys(), name, now, id, ScheduleTender.payload(def, now));
        metrics.triggered(name);
        log.info("schedule {}: triggered now by {} (state {}): message id {}", name, operator, view.state(), id);
        return id;
    }

    /**
     * Deletes a runtime schedule: its state and its pending entry, unless the relay already popped it.
     *
     * @throws IllegalStateException for a schedule declared in this instance's configuration
     */
    public boolean delete(String name, String operator) {
        BusinessSpec spec = businessOf(name);
        if (ticker.configured().getOrDefault(spec.name(), Map.of()).containsKey(name)) {
            throw new IllegalStateException("schedule " + name + " is declared in configuration (relay.schedules."
                    + name + "): remove it there");
        }
        ScheduleStore.Withdrawal w = store.delete(spec.keys(), name);
        log.info("schedule {}: deleted by {}{}", name, operator, w.withdrawn() ? ", its pending slot withdrawn" : "");
        return w.withdrawn();
    }

    private BusinessSpec businessOf(String name) {
        for (BusinessSpec spec : sorted()) {
            if (ticker.configured().getOrDefault(spec.name(), Map.of()).containsKey(name)
                    || store.ticks(spec.keys()).containsKey(name)) {
                return spec;
            }
        }
        throw new UnknownScheduleException(name);
    }

    private List<BusinessSpec> sorted() {
        List<BusinessSpec> specs = new ArrayList<>(businesses.get());
        specs.sort(java.util.Comparator.comparing(BusinessSpec::name));
        return specs;
    }

    private static long parse(String value, long otherwise) {
        return value == null || value.isEmpty() ? otherwise : Long.parseLong(value);
    }

    /** No business of this relay has a schedule of that name. */
    public static final class UnknownScheduleException extends RuntimeException {
        UnknownScheduleException(String name) {
            super("no schedule named '" + name + "'");
        }
    }
}
