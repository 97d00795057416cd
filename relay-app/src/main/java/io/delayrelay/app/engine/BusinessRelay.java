package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One business's worker threads, its wake signal and the reports its workers make. */
public final class BusinessRelay {

    private static final Logger log = LoggerFactory.getLogger(BusinessRelay.class);

    private final ShardStore store;
    private final BatchPublisher publisher;
    private final RelayEvents events;
    private final RedisClock clock;
    private final WakeSignal signal = new WakeSignal();
    private final ShardSchedule schedule = new ShardSchedule();
    private final List<Thread> workers = new ArrayList<>();
    private final java.util.Map<Integer, Long> quarantinedUntil = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.concurrent.ExecutorService settler;
    private final Object settleMonitor = new Object();
    private int batchesInFlight;
    private volatile BusinessSpec spec;
    private volatile boolean running;

    BusinessRelay(BusinessSpec spec, ShardStore store, BatchPublisher publisher, RelayEvents events, RedisClock clock) {
        this.spec = spec;
        this.store = store;
        this.publisher = publisher;
        this.events = events;
        this.clock = clock;
        this.schedule.ensureWidth(spec.drainShards());
        java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
        this.settler = java.util.concurrent.Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, spec.threadNamePrefix() + "settle-" + n.getAndIncrement());
            t.setDaemon(true);
            return t;
        });
    }

    synchronized void start() {
        running = true;
        adjustWorkers();
        log.info("business={} started: {} threads, {} shards, exchange '{}', routing key '{}', source key '{}'",
                spec.name(), spec.threads(), spec.shards(), spec.exchange(), spec.routingKey(), spec.keys().sourceKey());
    }

    /** Stops popping; waits up to {@code timeout} for workers to finish their batch, then interrupts them. */
    synchronized void stop(Duration timeout) {
        running = false;
        signal.wakeAll();
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread worker : workers) {
            try {
                long left = deadline - System.nanoTime();
                if (left > 0) {
                    worker.join(Math.max(1, left / 1_000_000));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (Thread worker : workers) {
            if (worker.isAlive()) {
                log.warn("business={}: worker {} still busy after {}, interrupting; its batch is left to the lease",
                        spec.name(), worker.getName(), timeout);
                worker.interrupt();
            }
        }
        workers.clear();
        awaitBatchesSettled(deadline);
        settler.shutdown();
    }

    /** Waits until every published batch is settled (acked or put back), or the deadline passes. */
    private void awaitBatchesSettled(long deadlineNanos) {
        synchronized (settleMonitor) {
            while (batchesInFlight > 0) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    log.warn("business={}: {} published batch(es) still unconfirmed at shutdown; left to the lease",
                            spec.name(), batchesInFlight);
                    return;
                }
                try {
                    settleMonitor.wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    void batchStarted() {
        synchronized (settleMonitor) {
            batchesInFlight++;
        }
    }

    void batchSettled() {
        synchronized (settleMonitor) {
            batchesInFlight--;
            settleMonitor.notifyAll();
        }
    }

    java.util.concurrent.Executor settler() {
        return settler;
    }

    /** Starts workers up to the spec's thread count; surplus workers notice on their own and exit. */
    private void adjustWorkers() {
        workers.removeIf(t -> !t.isAlive());
        java.util.Set<String> names = new java.util.HashSet<>();
        workers.forEach(t -> names.add(t.getName()));
        for (int i = 0; i < spec.threads(); i++) {
            String name = spec.threadNamePrefix() + i;
            if (!names.contains(name)) {
                Thread thread = new Thread(new ScanWorker(this, i), name);
                workers.add(thread);
                thread.start();
            }
        }
    }

    /**
     * Applies new settings at runtime (hot reload). The scan width only grows here: retired shards keep being
     * drained until the topology keeper finds them empty. Returns the spec now in force.
     */
    synchronized BusinessSpec update(BusinessSpec next, long topologyVersion) {
        BusinessSpec previous = spec;
        BusinessSpec merged = next.withDrainShards(Math.max(previous.drainShards(), next.shards()));
        if (next.shards() != previous.shards()) {
            ShardStore.Reshard meta = store.reshard(merged, topologyVersion);
            warnIfNotApplied(merged, meta);
            merged = merged.withDrainShards(Math.max(meta.scanWidth(next.shards()), previous.drainShards()));
            log.info("business={} shards {} -> {}; scanning {} shards until the retired ones are empty", next.name(),
                    previous.shards(), next.shards(), merged.drainShards());
        }
        spec = merged;
        schedule.ensureWidth(merged.drainShards());
        if (running) {
            adjustWorkers();
        }
        signal.wakeAll();
        return merged;
    }

    /** An instance whose configuration is older than the one that recorded K:meta's shard count says so. */
    static void warnIfNotApplied(BusinessSpec s, ShardStore.Reshard meta) {
        if (!meta.applied()) {
            log.warn("business={}: shards {} not recorded in {}: a configuration with a higher relay.topology-version "
                    + "recorded shards {}; following it (this instance scans {} shards)", s.name(), s.shards(),
                    s.keys().meta(), meta.shards(), meta.scanWidth(s.shards()));
        }
    }

    /** Sets how many shards are scanned (never below the shard count). */
    synchronized void setDrainShards(int width) {
        if (width != spec.drainShards()) {
            spec = spec.withDrainShards(width);
            schedule.ensureWidth(spec.drainShards());
            signal.wakeAll();
        }
    }

    public BusinessSpec spec() {
        return spec;
    }

    /** Pauses or resumes the workers. */
    public void setPaused(boolean paused) {
        spec = spec.withPaused(paused);
        signal.wakeAll();
    }

    /** A producer announced an entry due at {@code dueMs} in {@code shard}. */
    void wake(int shard, long dueMs) {
        schedule.lower(shard, dueMs);
        signal.wake(shard, dueMs);
    }

    ShardSchedule schedule() {
        return schedule;
    }

    boolean isRunning() {
        return running;
    }

    /** How long a shard whose keys hold the wrong data type is skipped before it is tried again. */
    static final long QUARANTINE_MS = 30_000;

    /**
     * Sets a shard aside: its keys hold something the scripts cannot work on (written by another program). Its
     * entries stay where they are; it is retried after {@link #QUARANTINE_MS} and logged each time.
     */
    void quarantine(BusinessSpec s, int shard, String cause) {
        quarantinedUntil.put(shard, System.currentTimeMillis() + QUARANTINE_MS);
        log.error("business={} shard={}: shard keys hold unexpected data ({}); skipping this shard for {} s. "
                + "Fix or remove the offending key ({} must be a zset, {} a zset, {} a hash)", s.name(), shard, cause,
                QUARANTINE_MS / 1000, s.keys().shard(shard), s.keys().inflight(shard), s.keys().payloads(shard));
    }

    boolean isQuarantined(int shard) {
        Long until = quarantinedUntil.get(shard);
        if (until == null) {
            return false;
        }
        if (System.currentTimeMillis() >= until) {
            quarantinedUntil.remove(shard, until);
            return false;
        }
        return true;
    }

    /** Shards currently set aside because their keys hold unexpected data. */
    public java.util.Set<Integer> quarantinedShards() {
        return quarantinedUntil.keySet().stream().filter(this::isQuarantined).collect(java.util.stream.Collectors.toSet());
    }

    /** Whether worker {@code index} should keep running (false after a stop or a reload to fewer threads). */
    boolean keepsWorker(int index) {
        return running && index < spec.threads();
    }

    /** Live worker threads. */
    public int liveWorkers() {
        synchronized (this) {
            return (int) workers.stream().filter(Thread::isAlive).count();
        }
    }

    WakeSignal signal() {
        return signal;
    }

    ShardStore store() {
        return store;
    }

    BatchPublisher publisher() {
        return publisher;
    }

    RedisClock clock() {
        return clock;
    }

    void reportRelayed(BusinessSpec s, int shard, List<DueMessage> confirmed) {
        try {
            events.relayed(s, shard, confirmed, clock.nowMs());
        } catch (RuntimeException e) {
            log.debug("business={} shard={}: relay event listener failed", s.name(), shard, e);
        }
    }

    void reportPublishFailed(BusinessSpec s, int shard, String cause, int count) {
        try {
            events.publishFailed(s, shard, cause, count);
        } catch (RuntimeException e) {
            log.debug("business={} shard={}: relay event listener failed", s.name(), shard, e);
        }
    }

    void reportDead(BusinessSpec s, int shard, String reason, List<byte[]> dead) {
        if (dead.isEmpty()) {
            return;
        }
        log.error("business={} shard={}: {} message(s) dead-lettered to {}: {}; first member: {}", s.name(), shard,
                dead.size(), s.keys().dead(shard), reason, preview(dead.get(0)));
        try {
            events.deadLettered(s, shard, reason, dead.size());
        } catch (RuntimeException e) {
            log.debug("business={} shard={}: relay event listener failed", s.name(), shard, e);
        }
    }

    void reportLeaseExpired(BusinessSpec s, int shard, int count) {
        if (count == 0) {
            return;
        }
        log.warn("business={} shard={}: {} entries' lease expired unconfirmed; put back for redelivery", s.name(),
                shard, count);
        try {
            events.leaseExpired(s, shard, count);
        } catch (RuntimeException e) {
            log.debug("business={} shard={}: relay event listener failed", s.name(), shard, e);
        }
    }

    void reportError(BusinessSpec s, int shard, Throwable error) {
        try {
            events.error(s, shard, error);
        } catch (RuntimeException e) {
            log.debug("business={} shard={}: relay event listener failed", s.name(), shard, e);
        }
    }

    /** At most 64 characters of a member, for logs: members are data, never logged in full. */
    static String preview(byte[] member) {
        String text = new String(member, 0, Math.min(member.length, 64), StandardCharsets.UTF_8);
        return "'" + text.replaceAll("\\p{Cntrl}", "?") + "'" + (member.length > 64 ? "... (" + member.length + " bytes)" : "");
    }
}
