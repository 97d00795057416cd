package io.delayrelay.app.schedule;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Tends the recurring schedules of every business this relay runs, on one thread: claims the schedules due to be
 * tended ({@code schedule-claim.lua}) and tends each ({@link ScheduleTender}). Any instance may tend any schedule;
 * the claim keeps the others off it, the cursor check makes a double tend write nothing. Starts before the engine,
 * with one pass over every business, so the catch-up of a fleet that was down is decided before the first pop.
 */
public final class ScheduleTicker implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(ScheduleTicker.class);

    /** A claim lapses after this long without a tend (the claiming instance died). */
    static final long CLAIM_LEASE_MS = 2_000;
    /** Most schedules claimed by one call. */
    static final int CLAIM_LIMIT = 100;
    /** Polls of a business with schedules: at its next tick, at most this long apart... */
    static final long MAX_POLL_MS = 1_000;
    /** ...and at least this long apart (a busy business's ticks are tended in groups). */
    static final long MIN_POLL_MS = 250;
    /** Polls of a business without a schedule (one may be created at runtime by another instance). */
    static final long IDLE_POLL_MS = 5_000;

    private final ScheduleStore store;
    private final ScheduleTender tender;
    private final Supplier<Collection<BusinessSpec>> businesses;
    private final Map<String, Long> nextPollNanos = new ConcurrentHashMap<>();
    private final Set<String> warned = ConcurrentHashMap.newKeySet();
    private final Set<String> failing = ConcurrentHashMap.newKeySet();
    /** Businesses whose last claim found no schedule: polled with one EXISTS until one appears. */
    private final Set<String> withoutSchedules = ConcurrentHashMap.newKeySet();

    private volatile Map<String, Map<String, ScheduleDefinition>> configured;
    private volatile Thread thread;
    private volatile boolean running;

    /**
     * @param configured the schedules declared in configuration, by business and name
     * @param businesses the businesses this relay runs now
     */
    public ScheduleTicker(
            ScheduleStore store,
            ScheduleMetrics metrics,
            Map<String, Map<String, ScheduleDefinition>> configured,
            Supplier<Collection<BusinessSpec>> businesses) {
        this.store = store;
        this.tender = new ScheduleTender(store, metrics);
        this.configured = configured;
        this.businesses = businesses;
    }

    /** The schedules declared in configuration, by business and name. */
    public Map<String, Map<String, ScheduleDefinition>> configured() {
        return configured;
    }

    /**
     * Takes new configured schedules (a reload): new and changed ones are tended at once (a changed one from its next
     * slot: a pending entry of the old definition is withdrawn).
     */
    public void reconfigure(Map<String, Map<String, ScheduleDefinition>> next, Map<String, DelayQueueKeys> keys) {
        Map<String, Map<String, ScheduleDefinition>> before = configured;
        configured = next;
        next.forEach((business, defs) -> defs.forEach((name, def) -> {
            ScheduleDefinition old = before.getOrDefault(business, Map.of()).get(name);
            DelayQueueKeys k = keys.get(business);
            if (k != null) {
                store.register(k, name, old == null || !old.equals(def));
            }
        }));
        wake();
    }

    /** Tends the business's schedules soon (a schedule was created, paused or resumed here). */
    public void wake(String business) {
        withoutSchedules.remove(business);
        nextPollNanos.put(business, 0L);
        wake();
    }

    private void wake() {
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    @Override
    public synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        for (BusinessSpec spec : businesses.get()) {
            try {
                configured
                        .getOrDefault(spec.name(), Map.of())
                        .keySet()
                        .forEach(name -> store.register(spec.keys(), name, false));
                poll(spec, System.nanoTime());
            } catch (RuntimeException e) {
                log.warn(
                        "business={}: recurring schedules not tended at start, trying again: {}",
                        spec.name(),
                        e.toString());
            }
        }
        thread = DaemonThreads.named("delay-relay-schedules").newThread(this::run);
        thread.start();
    }

    private void run() {
        while (running) {
            long now = System.nanoTime();
            long wakeAt = now + TimeUnit.MILLISECONDS.toNanos(IDLE_POLL_MS);
            for (BusinessSpec spec : businesses.get()) {
                long due = nextPollNanos.getOrDefault(spec.name(), 0L);
                if (due - now <= 0) {
                    try {
                        due = poll(spec, now);
                        if (failing.remove(spec.name())) {
                            log.info("business={}: recurring schedules are tended again", spec.name());
                        }
                    } catch (RuntimeException e) {
                        // said once per outage, not every second
                        if (failing.add(spec.name())) {
                            log.warn(
                                    "business={}: recurring schedules not tended (trying again every second): {}",
                                    spec.name(),
                                    e.toString());
                        }
                        due = now + TimeUnit.MILLISECONDS.toNanos(MAX_POLL_MS);
                        nextPollNanos.put(spec.name(), due);
                    }
                }
                wakeAt = due - wakeAt < 0 ? due : wakeAt;
            }
            long sleep = wakeAt - System.nanoTime();
            if (sleep > 0 && running) {
                LockSupport.parkNanos(this, sleep);
            }
        }
    }

    /** Claims and tends the business's due schedules; returns when to poll it next (nanoTime). */
    private long poll(BusinessSpec spec, long nowNanos) {
        DelayQueueKeys keys = spec.keys();
        if (withoutSchedules.contains(spec.name()) && !store.hasSchedules(keys)) {
            // a business without schedules costs one EXISTS a poll, not a claim script (four commands)
            long next = nowNanos + TimeUnit.MILLISECONDS.toNanos(IDLE_POLL_MS);
            nextPollNanos.put(spec.name(), next);
            return next;
        }
        ScheduleStore.Claim claim = store.claim(keys, CLAIM_LEASE_MS, CLAIM_LIMIT);
        if (claim.nextTickMs() < 0) {
            withoutSchedules.add(spec.name());
        } else {
            withoutSchedules.remove(spec.name());
        }
        Map<String, ScheduleDefinition> declared = configured.getOrDefault(spec.name(), Map.of());
        List<ScheduleTender.Prepared> batch = new ArrayList<>(claim.claimed().size());
        for (ScheduleStore.Claimed claimed : claim.claimed()) {
            ScheduleDefinition def = definitionOf(spec, declared, claimed);
            if (def != null) {
                try {
                    ScheduleTender.Prepared prepared = tender.prepare(keys, def, claimed, claim.nowMs());
                    if (prepared != null) {
                        batch.add(prepared);
                    }
                } catch (RuntimeException e) {
                    log.warn(
                            "business={}: schedule {} not tended, tried again within {} ms: {}",
                            spec.name(),
                            claimed.name(),
                            CLAIM_LEASE_MS,
                            e.toString());
                }
            }
        }
        if (!batch.isEmpty()) {
            // one script call writes the batch: a tend costs a few commands, not a round trip
            boolean[] written = store.write(
                    keys, batch.stream().map(ScheduleTender.Prepared::tend).toList());
            for (int i = 0; i < written.length; i++) {
                tender.finish(batch.get(i), written[i]);
            }
        }
        long delayMs;
        if (claim.claimed().size() >= CLAIM_LIMIT) {
            delayMs = 0;
        } else if (claim.nextTickMs() < 0) {
            delayMs = IDLE_POLL_MS;
        } else {
            delayMs = Math.max(MIN_POLL_MS, Math.min(MAX_POLL_MS, claim.nextTickMs() - claim.nowMs()));
        }
        long next = nowNanos + TimeUnit.MILLISECONDS.toNanos(delayMs);
        nextPollNanos.put(spec.name(), next);
        return next;
    }

    /**
     * The definition a claimed schedule is tended by: this instance's configuration, else the runtime definition in
     * its state. A schedule of neither kind (declared in configuration elsewhere, or no more) is left alone, listed by
     * the ops endpoint as not declared here.
     */
    private ScheduleDefinition definitionOf(
            BusinessSpec spec, Map<String, ScheduleDefinition> declared, ScheduleStore.Claimed claimed) {
        ScheduleDefinition def = declared.get(claimed.name());
        if (def != null) {
            return def;
        }
        String key = spec.name() + "/" + claimed.name();
        if ("runtime".equals(claimed.state().get("origin"))) {
            try {
                return ScheduleDefinition.fromFields(claimed.name(), spec.name(), claimed.state());
            } catch (RuntimeException e) {
                if (warned.add(key)) {
                    log.error(
                            "business={}: schedule {} has an unreadable definition in Redis, not tended: {}",
                            spec.name(),
                            claimed.name(),
                            e.getMessage());
                }
                return null;
            }
        }
        if (warned.add(key)) {
            log.warn(
                    "business={}: schedule {} is not declared in this instance's configuration (relay.schedules): not"
                            + " tended here; delete it with the ops endpoint if it is gone for good",
                    spec.name(),
                    claimed.name());
        }
        return null;
    }

    @Override
    public void stop() {
        running = false;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        thread = null;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Starts before the engine (its first pass decides catch-up before any pop) and stops after it. */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 1100;
    }

    static Map<String, Map<String, ScheduleDefinition>> byBusiness(Collection<ScheduleDefinition> defs) {
        Map<String, Map<String, ScheduleDefinition>> out = new HashMap<>();
        defs.forEach(
                d -> out.computeIfAbsent(d.business(), b -> new HashMap<>()).put(d.name(), d));
        return out;
    }
}
