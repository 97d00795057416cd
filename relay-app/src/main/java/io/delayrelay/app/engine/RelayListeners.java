package io.delayrelay.app.engine;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listeners of one kind of business event the engine reports (a K:meta change, a business about to start). A
 * listener that fails is logged and the others are still told: a listener never stops the engine's work.
 */
final class RelayListeners {

    private static final Logger log = LoggerFactory.getLogger(RelayListeners.class);

    private final String what;
    private final List<Consumer<BusinessRelay>> listeners = new CopyOnWriteArrayList<>();

    /** Listeners of {@code what}, as named in the log line of a failure. */
    RelayListeners(String what) {
        this.what = what;
    }

    void add(Consumer<BusinessRelay> listener) {
        listeners.add(listener);
    }

    /** Tells every listener about {@code relay}; never throws. */
    void tell(BusinessRelay relay) {
        for (Consumer<BusinessRelay> listener : listeners) {
            try {
                listener.accept(relay);
            } catch (RuntimeException e) {
                log.warn("business={}: a {} listener failed: {}", relay.spec().name(), what, e.toString());
            }
        }
    }
}
