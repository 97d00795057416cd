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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.delayrelay.app.engine.wake.KeyspaceWakeSource;
import io.delayrelay.app.engine.wake.WakeSubscriber;
import io.delayrelay.app.support.DaemonThreads;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * Runs every business: checks exchanges, publishes shard counts to {@code K:meta}, starts the workers, the wake-up
 * listeners and the housekeeping (topology, dead workers); at shutdown stops popping and lets running batches
 * finish (bounded). Expired leases are taken back by the workers whose pops see them ({@link LeaseReaper}).
 *
 * <p>At start Redis and RabbitMQ must answer. One that is not reachable (yet) is waited for: the engine does not
 * run, so readiness stays down, a WARN names the server every {@link Settings#startRetry()} and the engine starts
 * once both answer (a relay started before its Redis is not put into a crash loop). One that answers and refuses
 * the relay (credentials, ACL, vhost) is a configuration mistake: start-up fails with a
 * {@link ServiceAccessException}.
 *
 * <p>Longer than 300 lines because it is the one place that orders a business's life: start (and wait for the servers),
 * reload, stop. The parts live elsewhere: {@link BusinessRelay} (workers), {@link ExchangeCheck},
 * {@link ServiceFailure} (what a failure at start means), {@link HeapBudget}, {@link TopologyKeeper}.
 */
public class RelayEngine implements SmartLifecycle, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

    private final ShardStore store;
    private final BatchPublisher publisher;
    private final EventReporter events;
    private final RedisClock clock;
    private final RedisConnectionFactory redisConnectionFactory;
    private final Settings settings;
    private final ExchangeCheck exchanges;
    private final Map<String, BusinessRelay> relays = new ConcurrentHashMap<>();
    private final List<Consumer<BusinessRelay>> metaListeners = new CopyOnWriteArrayList<>();
    private final List<Consumer<BusinessRelay>> startListeners = new CopyOnWriteArrayList<>();
    private WakeSubscriber wakeSubscriber;
    private KeyspaceWakeSource keyspaceWake;
    private ScheduledExecutorService housekeeping;
    /** Renews the seats in the businesses' shard divisions (a thread of its own: a slow housekeeping round must not
     * let a seat expire). */
    private ScheduledExecutorService seats;
    /** Added to a renewal period in a graceful stop's hand-over: the others' renewal calls and their sweep pops. */
    static final Duration HAND_OVER_MARGIN = ShardDivision.JOIN_MARGIN;
    /** This instance's name in every business's {@code {K:cursor}:seats}: pid@host and a random suffix. */
    private final String holder = ManagementFactory.getRuntimeMXBean().getName() + "-"
            + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);

    private ScheduledExecutorService starter;
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

        /** Retries every 10 s; the servers are named without address. */
        public Settings(
                Duration reaperInterval,
                Duration shutdownTimeout,
                boolean verifyExchanges,
                Duration reshardGrace,
                long topologyVersion,
                KeyspaceWakeSource.Settings wake) {
            this(
                    reaperInterval,
                    shutdownTimeout,
                    verifyExchanges,
                    reshardGrace,
                    topologyVersion,
                    wake,
                    DEFAULT_START_RETRY,
                    "(address not known)",
                    "(address not known)",
                    ShardDivision.Settings.DEFAULT);
        }
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
        this.redisConnectionFactory = redisConnectionFactory;
        this.settings = settings;
        this.exchanges = new ExchangeCheck(publisher, settings.verifyExchanges());
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
     * Starts relaying when Redis and RabbitMQ answer; when one is not reachable, returns at once and keeps trying on
     * a thread of its own (not running meanwhile, so readiness stays down).
     *
     * @throws ServiceAccessException when a server refuses the relay
     * @throws RelayConfigurationException when an exchange is missing
     */
    @Override
    public synchronized void start() {
        if (running || starter != null) {
            return;
        }
        warnIfHeapTooSmall();
        if (connect()) {
            startRelaying();
            return;
        }
        long every = Math.max(10, settings.startRetry().toMillis());
        starter = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-start"));
        starter.scheduleWithFixedDelay(this::retryStart, every, every, TimeUnit.MILLISECONDS);
    }

    /** A scheduled task: must not throw. A refusal now is logged (the process is up already) and tried again. */
    private synchronized void retryStart() {
        if (running || starter == null) {
            return;
        }
        try {
            if (connect()) {
                startRelaying();
                starter.shutdown();
                starter = null;
            }
        } catch (RuntimeException e) {
            log.error(
                    "delay-relay cannot start, readiness DOWN; trying again every {} ms: {}",
                    settings.startRetry().toMillis(),
                    e.getMessage());
        }
    }

    /**
     * Checks that Redis and RabbitMQ answer and the exchanges exist, and records the shard counts. False (after a
     * WARN naming the server) when one is not reachable.
     */
    private boolean connect() {
        String service = "Redis";
        try {
            pingRedis();
            service = "RabbitMQ";
            prepareExchanges();
            service = "Redis";
            relays.values()
                    .forEach(relay ->
                            relay.adoptTopology(settings.topologyVersion(), TopologyKeeper.PRODUCERS_FALLBACK_SHARDS));
            return true;
        } catch (RuntimeException e) {
            boolean redis = service.equals("Redis");
            return ServiceFailure.waitOrThrow(
                    e, service, redis ? settings.redisEndpoint() : settings.rabbitEndpoint(), settings.startRetry());
        }
    }

    /** One ping; asked again at once when the first failure is {@link ServiceFailure#UNCLEAR}, not waited on. */
    private void pingRedis() {
        try (RedisConnection connection = redisConnectionFactory.getConnection()) {
            connection.ping();
        } catch (RuntimeException first) {
            if (ServiceFailure.ofRedis(first) != ServiceFailure.UNCLEAR) {
                throw first;
            }
            log.debug("Redis connection failed without a network error or an answer; asking again at once", first);
            try (RedisConnection connection = redisConnectionFactory.getConnection()) {
                connection.ping();
            }
        }
    }

    private void startRelaying() {
        wakeSubscriber = new WakeSubscriber(redisConnectionFactory);
        relays.values().forEach(this::subscribeWake);
        wakeSubscriber.start();
        keyspaceWake = new KeyspaceWakeSource(redisConnectionFactory, settings.wake(), clock::nowMs);
        keyspaceWake.start();
        keyspaceWake.onModeChange(on -> relays.values().forEach(relay -> useWakeMode(relay, on)));
        relays.values().forEach(this::subscribeKeyspace);
        relays.values().forEach(BusinessRelay::renewSeat);
        relays.values().forEach(this::followShare);
        relays.values().forEach(BusinessRelay::start);
        if (settings.division().enabled()) {
            long renewMs = Math.max(1, settings.division().renewEvery().toMillis());
            seats = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-seats"));
            // at a fixed rate: a slow renewal must not push the next ones later (the hand-over bound counts on them)
            seats.scheduleAtFixedRate(this::renewSeats, renewMs, renewMs, TimeUnit.MILLISECONDS);
        }
        housekeeping = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-housekeeping"));
        long interval = settings.reaperInterval().toMillis();
        TopologyKeeper topologyKeeper = new TopologyKeeper(
                this::businessRelays, settings.reshardGrace(), System::nanoTime, events, settings.topologyVersion());
        housekeeping.scheduleWithFixedDelay(topologyKeeper, interval, interval, TimeUnit.MILLISECONDS);
        housekeeping.scheduleWithFixedDelay(this::restartDeadWorkers, interval, interval, TimeUnit.MILLISECONDS);
        running = true;
        log.info("delay-relay started with {} business(es): {}", relays.size(), relays.keySet());
    }

    private void prepareExchanges() {
        List<ConfigProblem> missing = new ArrayList<>();
        for (BusinessRelay relay : relays.values()) {
            ConfigProblem problem = exchanges.problemAtStart(relay.spec());
            if (problem != null) {
                missing.add(problem);
            }
        }
        if (!missing.isEmpty()) {
            throw new RelayConfigurationException(missing);
        }
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
                    wakeSubscriber.unsubscribe(removed.spec().keys().wake());
                    keyspaceWake.unsubscribe(removed);
                }
                log.info("business={} removed from configuration: stopped; its entries stay in Redis", name);
            }
        }
        for (BusinessSpec next : wanted.values()) {
            BusinessRelay current = relays.get(next.name());
            if (current == null) {
                ConfigProblem problem = exchanges.problem(next);
                if (problem != null) {
                    problems.add(problem);
                    continue;
                }
                BusinessRelay added = newRelay(next);
                relays.put(next.name(), added);
                if (running) {
                    added.adoptTopology(settings.topologyVersion(), TopologyKeeper.PRODUCERS_FALLBACK_SHARDS);
                    subscribeWake(added);
                    subscribeKeyspace(added);
                    tell(startListeners, added, "start");
                    added.renewSeat();
                    followShare(added);
                    added.start();
                }
                continue;
            }
            BusinessSpec old = current.spec();
            if (!old.keys().equals(next.keys())) {
                problems.add(ConfigProblem.property(
                        next.name(),
                        "source-key",
                        next.keys().sourceKey(),
                        "cannot change while running (was " + old.keys().sourceKey() + "); restart the relay"));
                continue;
            }
            if (!old.route().exchange().equals(next.route().exchange())
                    || old.route().declare() != next.route().declare()) {
                ConfigProblem problem = exchanges.problem(next);
                if (problem != null) {
                    problems.add(problem);
                    continue;
                }
            }
            current.update(next, settings.topologyVersion());
        }
        warnIfHeapTooSmall();
        return problems;
    }

    private void warnIfHeapTooSmall() {
        String warning = HeapBudget.warning(
                relays.values().stream().map(BusinessRelay::spec).toList(),
                Runtime.getRuntime().maxMemory());
        if (warning != null) {
            log.warn(warning);
        }
    }

    /** Stops trying to start (the lifecycle's stop is called only once the engine runs). */
    @Override
    public synchronized void destroy() {
        if (starter != null) {
            starter.shutdownNow();
            starter = null;
        }
    }

    @Override
    public synchronized void stop() {
        destroy();
        if (!running) {
            return;
        }
        running = false;
        if (housekeeping != null) {
            housekeeping.shutdownNow();
        }
        if (seats != null) {
            seats.shutdownNow();
        }
        long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
        handOver(deadline);
        for (BusinessRelay relay : relays.values()) {
            relay.stop(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
        }
        if (wakeSubscriber != null) {
            wakeSubscriber.stop();
        }
        if (keyspaceWake != null) {
            keyspaceWake.close();
        }
        log.info("delay-relay stopped");
    }

    /**
     * A graceful stop's hand-over: every seat is given up first, and when another instance holds a seat the workers
     * relay on for one renewal period plus {@link #HAND_OVER_MARGIN} (within the shutdown timeout), until every other
     * instance has renewed and taken its part of this one's shards; so no shard is nobody's meanwhile.
     */
    private void handOver(long deadline) {
        boolean others = false;
        for (BusinessRelay relay : relays.values()) {
            others |= relay.leaveSeat();
        }
        if (!others || !settings.division().enabled()) {
            return;
        }
        long waitNanos = Math.min(
                settings.division().renewEvery().plus(HAND_OVER_MARGIN).toNanos(),
                Math.max(0, deadline - System.nanoTime()) / 2);
        log.info(
                "seats given up; relaying on for {} ms while the other instances take the shards over",
                TimeUnit.NANOSECONDS.toMillis(waitNanos));
        try {
            TimeUnit.NANOSECONDS.sleep(waitNanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 1000;
    }

    /** Hears the business's {@code K:wake} channel: producers' wake-ups and operators' meta notices. */
    private void subscribeWake(BusinessRelay relay) {
        BusinessSpec spec = relay.spec();
        wakeSubscriber.subscribe(spec.name(), spec.keys().wake(), relay, () -> metaChanged(relay));
    }

    /** Hears the business's shard keys; with notifications on, its idle workers sweep only every safety-sweep. */
    private void subscribeKeyspace(BusinessRelay relay) {
        keyspaceWake.subscribe(relay.spec().keys(), relay);
        useWakeMode(relay, keyspaceWake.active());
    }

    /** With notifications working idle workers sleep up to the safety sweep, else max-idle; the gauge follows. */
    private void useWakeMode(BusinessRelay relay, boolean keyspace) {
        relay.state().useSafetySweep(keyspace ? settings.wake().safetySweep() : null);
        BusinessSpec spec = relay.spec();
        events.emit(spec, -1, e -> e.wakeMode(spec, keyspace));
    }

    /**
     * Calls {@code listener} with a business whenever its {@code K:meta} may have changed: a
     * {@value io.delayrelay.api.MetaFields#CHANGED_NOTICE} notice on its {@code K:wake} channel, and every
     * (re)subscription of that channel. Called on the subscriber's thread: the listener must not block.
     */
    public void onMetaChanged(Consumer<BusinessRelay> listener) {
        metaListeners.add(listener);
    }

    /**
     * Calls {@code listener} with a business added by a reload after it is set up and before its workers start, on
     * the reloading thread: what must hold from the workers' first pop on (an operator's pause of the fleet) is
     * applied there. A listener that fails is logged; the business starts anyway.
     */
    public void beforeStart(Consumer<BusinessRelay> listener) {
        startListeners.add(listener);
    }

    private void metaChanged(BusinessRelay relay) {
        tell(metaListeners, relay, "K:meta change");
    }

    private static void tell(List<Consumer<BusinessRelay>> listeners, BusinessRelay relay, String what) {
        for (Consumer<BusinessRelay> listener : listeners) {
            try {
                listener.accept(relay);
            } catch (RuntimeException e) {
                log.warn("business={}: a {} listener failed: {}", relay.spec().name(), what, e.toString());
            }
        }
    }

    /** The business relays, by name. */
    public Map<String, BusinessRelay> relays() {
        return Map.copyOf(relays);
    }

    /** A scheduled task: must not throw, or its schedule ends ({@link BusinessRelay#renewSeat} never throws). */
    private void renewSeats() {
        for (BusinessRelay relay : relays.values()) {
            relay.renewSeat();
            followShare(relay);
        }
    }

    /** The keyspace channels heard follow the shards this instance pops (never throws: checked again in 500 ms). */
    private void followShare(BusinessRelay relay) {
        try {
            keyspaceWake.follow(relay);
        } catch (RuntimeException e) {
            log.debug(
                    "business={}: following its share with the keyspace channels failed",
                    relay.spec().name(),
                    e);
        }
    }

    /** This instance's name in the businesses' {@code {K:cursor}:seats}. */
    public String holder() {
        return holder;
    }

    /** A scheduled task: must not throw, or its schedule ends. */
    private void restartDeadWorkers() {
        for (BusinessRelay relay : relays.values()) {
            try {
                relay.restartDeadWorkers();
            } catch (RuntimeException e) {
                log.warn(
                        "business={}: restarting dead workers failed: {}",
                        relay.spec().name(),
                        e.toString());
            }
        }
    }

    private Collection<BusinessRelay> businessRelays() {
        return relays.values();
    }
}
