package io.delayrelay.app.engine;

import java.util.Collection;
import java.util.function.Consumer;
import java.util.function.Supplier;

import io.delayrelay.app.engine.wake.KeyspaceWakeSource;
import io.delayrelay.app.engine.wake.WakeSubscriber;
import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The engine's wake-up sources, for every business: the {@code K:wake} channel ({@link WakeSubscriber}) and the
 * keyspace notifications of the shard keys ({@link KeyspaceWakeSource}). Businesses join and leave as the
 * configuration is reloaded; the keyspace channels heard follow each business's share of the shards.
 */
final class EngineWakeups {

    private static final Logger log = LoggerFactory.getLogger(EngineWakeups.class);

    private final RedisConnectionFactory redis;
    private final KeyspaceWakeSource.Settings settings;
    private final RedisClock clock;
    private final EventReporter events;
    /** Told of a business whose {@code K:meta} may have changed. */
    private final Consumer<BusinessRelay> metaChanged;

    private WakeSubscriber wakeSubscriber;
    private KeyspaceWakeSource keyspaceWake;

    EngineWakeups(
            RedisConnectionFactory redis,
            KeyspaceWakeSource.Settings settings,
            RedisClock clock,
            EventReporter events,
            Consumer<BusinessRelay> metaChanged) {
        this.redis = redis;
        this.settings = settings;
        this.clock = clock;
        this.events = events;
        this.metaChanged = metaChanged;
    }

    /** Starts both sources for the businesses {@code relays} supplies now and at every wake mode change. */
    void start(Supplier<Collection<BusinessRelay>> relays) {
        wakeSubscriber = new WakeSubscriber(redis);
        relays.get().forEach(this::subscribeWake);
        wakeSubscriber.start();
        keyspaceWake = new KeyspaceWakeSource(redis, settings, clock::nowMs);
        keyspaceWake.start();
        keyspaceWake.onModeChange(on -> relays.get().forEach(relay -> useWakeMode(relay, on)));
        relays.get().forEach(this::subscribeKeyspace);
    }

    /** A business added while the engine runs. */
    void add(BusinessRelay relay) {
        subscribeWake(relay);
        subscribeKeyspace(relay);
    }

    /** A business removed while the engine runs. */
    void remove(BusinessRelay relay) {
        wakeSubscriber.unsubscribe(relay.spec().keys().wake());
        keyspaceWake.unsubscribe(relay);
    }

    /** The keyspace channels heard follow the shards this instance pops (never throws: checked again in 500 ms). */
    void follow(BusinessRelay relay) {
        try {
            keyspaceWake.follow(relay);
        } catch (RuntimeException e) {
            log.debug(
                    "business={}: following its share with the keyspace channels failed",
                    relay.spec().name(),
                    e);
        }
    }

    void stop() {
        if (wakeSubscriber != null) {
            wakeSubscriber.stop();
        }
        if (keyspaceWake != null) {
            keyspaceWake.close();
        }
    }

    /** Hears the business's {@code K:wake} channel: producers' wake-ups and operators' meta notices. */
    private void subscribeWake(BusinessRelay relay) {
        BusinessSpec spec = relay.spec();
        wakeSubscriber.subscribe(spec.name(), spec.keys().wake(), relay, () -> metaChanged.accept(relay));
    }

    /** Hears the business's shard keys; with notifications on, its idle workers sweep only every safety-sweep. */
    private void subscribeKeyspace(BusinessRelay relay) {
        keyspaceWake.subscribe(relay.spec().keys(), relay);
        useWakeMode(relay, keyspaceWake.active());
    }

    /** With notifications working idle workers sleep up to the safety sweep, else max-idle; the gauge follows. */
    private void useWakeMode(BusinessRelay relay, boolean keyspace) {
        relay.state().useSafetySweep(keyspace ? settings.safetySweep() : null);
        BusinessSpec spec = relay.spec();
        events.emit(spec, -1, e -> e.wakeMode(spec, keyspace));
    }
}
