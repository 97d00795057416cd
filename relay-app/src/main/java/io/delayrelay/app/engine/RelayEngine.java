package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.AmqpConnectException;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * Runs every business: checks exchanges, publishes shard counts to {@code K:meta}, starts the workers, the wake-up
 * listener and the lease reaper; at shutdown stops popping and lets running batches finish (bounded).
 */
public class RelayEngine implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

    private final ShardStore store;
    private final BatchPublisher publisher;
    private final RelayEvents events;
    private final RedisClock clock;
    private final RedisConnectionFactory redisConnectionFactory;
    private final Settings settings;
    private final Map<String, BusinessRelay> relays = new LinkedHashMap<>();
    private WakeSubscriber wakeSubscriber;
    private ScheduledExecutorService reaper;
    private volatile boolean running;

    /**
     * Engine-wide settings.
     *
     * @param reaperInterval  how often expired leases are reaped
     * @param shutdownTimeout longest wait for running batches at stop
     * @param verifyExchanges whether a missing exchange fails start-up
     */
    public record Settings(Duration reaperInterval, Duration shutdownTimeout, boolean verifyExchanges) {
    }

    public RelayEngine(List<BusinessSpec> specs, ShardStore store, BatchPublisher publisher, RelayEvents events,
            RedisClock clock, RedisConnectionFactory redisConnectionFactory, Settings settings) {
        this.store = store;
        this.publisher = publisher;
        this.events = events;
        this.clock = clock;
        this.redisConnectionFactory = redisConnectionFactory;
        this.settings = settings;
        for (BusinessSpec spec : specs) {
            relays.put(spec.name(), new BusinessRelay(spec, store, publisher, events, clock));
        }
    }

    @Override
    public synchronized void start() {
        if (running) {
            return;
        }
        prepareExchanges();
        for (BusinessRelay relay : relays.values()) {
            store.publishTopology(relay.spec(), "");
        }
        wakeSubscriber = new WakeSubscriber(redisConnectionFactory);
        relays.values().forEach(wakeSubscriber::subscribe);
        wakeSubscriber.start();
        relays.values().forEach(BusinessRelay::start);
        reaper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "relay-lease-reaper");
            t.setDaemon(true);
            return t;
        });
        long interval = settings.reaperInterval().toMillis();
        reaper.scheduleWithFixedDelay(new LeaseReaper(this::businessRelays), interval, interval, TimeUnit.MILLISECONDS);
        running = true;
        log.info("delay-relay started with {} business(es): {}", relays.size(), relays.keySet());
    }

    private void prepareExchanges() {
        List<String> missing = new ArrayList<>();
        for (BusinessRelay relay : relays.values()) {
            BusinessSpec spec = relay.spec();
            try {
                publisher.prepareExchange(spec);
            } catch (AmqpConnectException e) {
                log.warn("business={}: RabbitMQ is not reachable at start ({}); exchange '{}' not checked, "
                        + "messages stay in Redis until the broker is back", spec.name(),
                        AmqpBatchPublisher.rootMessage(e), spec.exchange());
            } catch (RuntimeException e) {
                String cause = AmqpBatchPublisher.rootMessage(e);
                if (cause.contains("NOT_FOUND") && settings.verifyExchanges()) {
                    missing.add("relay.businesses." + spec.name() + ".exchange=" + spec.exchange()
                            + ": no such exchange on the broker (declare it, or set declare-exchange: true)");
                } else {
                    log.warn("business={}: could not check exchange '{}': {}", spec.name(), spec.exchange(), cause);
                }
            }
        }
        if (!missing.isEmpty()) {
            throw new IllegalStateException("Invalid delay-relay configuration:\n  - " + String.join("\n  - ", missing));
        }
    }

    @Override
    public synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        if (reaper != null) {
            reaper.shutdownNow();
        }
        long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
        for (BusinessRelay relay : relays.values()) {
            relay.stop(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
        }
        if (wakeSubscriber != null) {
            wakeSubscriber.stop();
        }
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

    /** The business relays, by name. */
    public Map<String, BusinessRelay> relays() {
        return Map.copyOf(relays);
    }

    private Collection<BusinessRelay> businessRelays() {
        return relays.values();
    }

    RelayEvents events() {
        return events;
    }

    RedisClock clock() {
        return clock;
    }
}
