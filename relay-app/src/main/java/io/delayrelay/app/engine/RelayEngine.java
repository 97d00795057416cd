package io.delayrelay.app.engine;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;

import io.delayrelay.app.engine.wake.KeyspaceWakeSource;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * Runs every business through its life: start, reload, stop. At start it waits for Redis and RabbitMQ
 * ({@link EngineStart}), records the shard counts, then starts the workers, the wake-up listeners, the seats
 * ({@link SeatRenewals}) and the housekeeping (topology, dead workers). At stop it hands the shards over and lets
 * running batches finish, bounded by the shutdown timeout.
 */
public class RelayEngine implements SmartLifecycle, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

    private final ShardStore store;
    private final BatchPublisher publisher;
    private final EventReporter events;
    private final RedisClock clock;
    private final Settings settings;
    private final ExchangeCheck exchanges;
    private final Map<String, BusinessRelay> relays = new ConcurrentHashMap<>();
    private final RelayListeners metaListeners = new RelayListeners("K:meta change");
    private final RelayListeners startListeners = new RelayListeners("start");
    private final EngineWakeups wakeups;
    private Housekeeping housekeeping;
    private final SeatRenewals seats;
    /** This instance's name in every business's {@code {K:cursor}:seats}: pid@host and a random suffix. */
    private final String holder = ManagementFactory.getRuntimeMXBean().getName() + "-"
            + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);

    private final EngineStart starting;
    private volatile boolean running;

    /**
     * Engine-wide settings.
     *
     * @param reaperInterval  how often the shard counts in {@code K:meta} are followed and dead workers restarted
     * @param shutdownTimeout longest wait for running batches at stop
     * @param verifyExchanges whether a missing exchange fails start-up
     * @param reshardGrace    how long after a shard count change retired shards are drained at least
     * @param topologyVersion version of this configuration's shard counts: never written over a higher one
     * @param wake            whether keyspace notifications wake the workers, and the safety sweep with them
     * @param startRetry      while Redis or RabbitMQ is not reachable at start, how often the engine tries again
     * @param redisEndpoint   Redis as named in log lines and reports: address and user
     * @param rabbitEndpoint  RabbitMQ as named in log lines and reports: address, virtual host and user
     * @param division        how the fleet divides each business's shards among its instances
     */
    public record Settings(
            Duration reaperInterval,
            Duration shutdownTimeout,
            boolean verifyExchanges,
            Duration reshardGrace,
            long topologyVersion,
            KeyspaceWakeSource.Settings wake,
            Duration startRetry,
            String redisEndpoint,
            String rabbitEndpoint,
            ShardDivision.Settings division) {

        public static final Duration DEFAULT_START_RETRY = Duration.ofSeconds(10);
    }

    public RelayEngine(
            List<BusinessSpec> specs,
            ShardStore store,
            BatchPublisher publisher,
            RelayEvents events,
            RedisClock clock,
            RedisConnectionFactory redisConnectionFactory,
            Settings settings) {
        this.store = store;
        this.publisher = publisher;
        this.events = new EventReporter(events);
        this.clock = clock;
        this.settings = settings;
        this.exchanges = new ExchangeCheck(publisher, settings.verifyExchanges());
        this.wakeups =
                new EngineWakeups(redisConnectionFactory, settings.wake(), clock, this.events, metaListeners::tell);
        this.seats = new SeatRenewals(settings.division(), this::businessRelays, wakeups::follow);
        this.starting = new EngineStart(
                this,
                redisConnectionFactory,
                settings,
                new EngineStart.Steps(
                        this::isRunning, this::prepareExchanges, this::recordTopologies, this::startRelaying));
        for (BusinessSpec spec : specs) {
            relays.put(spec.name(), newRelay(spec));
        }
    }

    private BusinessRelay newRelay(BusinessSpec spec) {
        return new BusinessRelay(
                spec,
                store,
                publisher,
                events,
                clock,
                new ShardDivision(holder, settings.division(), System::nanoTime));
    }

    /**
     * Starts relaying when Redis and RabbitMQ answer, or keeps trying on a thread of its own ({@link EngineStart}).
     *
     * @throws ServiceAccessException when a server refuses the relay
     * @throws RelayConfigurationException when an exchange is missing
     */
    @Override
    public synchronized void start() {
        if (running || starting.waiting()) {
            return;
        }
        warnIfHeapTooSmall();
        starting.start();
    }

    private void recordTopologies() {
        relays.values()
                .forEach(relay ->
                        relay.adoptTopology(settings.topologyVersion(), TopologyKeeper.PRODUCERS_FALLBACK_SHARDS));
    }

    private void startRelaying() {
        wakeups.start(this::businessRelays);
        relays.values().forEach(seats::join);
        relays.values().forEach(BusinessRelay::start);
        seats.start();
        TopologyKeeper topologyKeeper = new TopologyKeeper(
                this::businessRelays, settings.reshardGrace(), System::nanoTime, events, settings.topologyVersion());
        housekeeping = new Housekeeping(
                this::businessRelays, topologyKeeper, settings.reaperInterval().toMillis());
        housekeeping.start();
        running = true;
        log.info("delay-relay started with {} business(es): {}", relays.size(), relays.keySet());
    }

    private void prepareExchanges() {
        exchanges.requireAtStart(
                relays.values().stream().map(BusinessRelay::spec).toList());
    }

    /**
     * Applies reloaded settings: starts added businesses, stops removed ones (their running batch finishes) and
     * updates the others in place. {@code keep} names businesses whose reload was rejected: they keep running
     * with their previous settings. Returns problems that made a business's change be rejected here.
     */
    public synchronized List<ConfigProblem> apply(List<BusinessSpec> specs, Set<String> keep) {
        List<ConfigProblem> problems = new ArrayList<>();
        Map<String, BusinessSpec> wanted = new LinkedHashMap<>();
        specs.forEach(s -> wanted.put(s.name(), s));
        for (String name : List.copyOf(relays.keySet())) {
            if (!wanted.containsKey(name) && !keep.contains(name)) {
                BusinessRelay removed = relays.remove(name);
                if (running) {
                    removed.stop(settings.shutdownTimeout());
                    wakeups.remove(removed);
                }
                log.info("business={} removed from configuration: stopped; its entries stay in Redis", name);
            }
        }
        for (BusinessSpec next : wanted.values()) {
            BusinessRelay current = relays.get(next.name());
            ConfigProblem problem = current == null ? exchanges.problem(next) : problemOfChange(current.spec(), next);
            if (problem != null) {
                problems.add(problem);
            } else if (current == null) {
                add(next);
            } else {
                current.update(next, settings.topologyVersion());
            }
        }
        warnIfHeapTooSmall();
        return problems;
    }

    /** A business added by a reload: set up, and started when the engine runs. */
    private void add(BusinessSpec spec) {
        BusinessRelay added = newRelay(spec);
        relays.put(spec.name(), added);
        if (running) {
            added.adoptTopology(settings.topologyVersion(), TopologyKeeper.PRODUCERS_FALLBACK_SHARDS);
            wakeups.add(added);
            startListeners.tell(added);
            seats.join(added);
            added.start();
        }
    }

    /** What keeps a running business from taking a reloaded change (its source key, a missing exchange), or null. */
    private ConfigProblem problemOfChange(BusinessSpec old, BusinessSpec next) {
        if (!old.keys().equals(next.keys())) {
            return ConfigProblem.property(
                    next.name(),
                    "source-key",
                    next.keys().sourceKey(),
                    "cannot change while running (was " + old.keys().sourceKey() + "); restart the relay");
        }
        boolean exchangeChanged = !old.route().exchange().equals(next.route().exchange())
                || old.route().declare() != next.route().declare();
        return exchangeChanged ? exchanges.problem(next) : null;
    }

    private void warnIfHeapTooSmall() {
        HeapBudget.warnIfTooSmall(
                relays.values().stream().map(BusinessRelay::spec).toList());
    }

    /** Stops trying to start (the lifecycle's stop is called only once the engine runs). */
    @Override
    public synchronized void destroy() {
        starting.cancel();
    }

    @Override
    public synchronized void stop() {
        destroy();
        if (!running) {
            return;
        }
        running = false;
        if (housekeeping != null) {
            housekeeping.stop();
        }
        seats.stop();
        long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
        seats.handOver(deadline);
        for (BusinessRelay relay : relays.values()) {
            relay.stop(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
        }
        wakeups.stop();
        log.info("delay-relay stopped");
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 1000;
    }

    /**
     * Calls {@code listener} with a business whose {@code K:meta} may have changed: a notice on its {@code K:wake}
     * channel, or a (re)subscription of it. Called on the subscriber's thread: the listener must not block.
     */
    public void onMetaChanged(Consumer<BusinessRelay> listener) {
        metaListeners.add(listener);
    }

    /**
     * Calls {@code listener} with a business added by a reload before its workers start, on the reloading thread
     * (an operator's pause of the fleet holds from the first pop on). A failing listener is logged only.
     */
    public void beforeStart(Consumer<BusinessRelay> listener) {
        startListeners.add(listener);
    }

    /** The business relays, by name. */
    public Map<String, BusinessRelay> relays() {
        return Map.copyOf(relays);
    }

    /** This instance's name in the businesses' {@code {K:cursor}:seats}. */
    public String holder() {
        return holder;
    }

    private Collection<BusinessRelay> businessRelays() {
        return relays.values();
    }
}
