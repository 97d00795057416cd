package io.delayrelay.app.ops;

import java.time.Duration;

import io.delayrelay.app.config.BusinessSettings;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * How much of a business's dead set is kept: at most {@code maxSize} dead letters, none older than {@code maxAge}.
 * Read from the environment at each trim ({@code relay.defaults.dead-max-*}, then
 * {@code relay.businesses.<name>.dead-max-*}), so a reloaded value applies from the next trim.
 */
public record DeadSetBounds(int maxSize, Duration maxAge) {

    /** The bounds in force for a business; a value that is not valid (the reload rejected it) falls back to the default. */
    public static DeadSetBounds of(Environment environment, String business) {
        BusinessSettings s = new BusinessSettings();
        Binder binder = Binder.get(environment);
        binder.bind("relay.defaults", Bindable.ofInstance(s));
        binder.bind("relay.businesses." + business, Bindable.ofInstance(s));
        int size = s.getDeadMaxSize() >= 1 ? s.getDeadMaxSize() : BusinessSettings.DEFAULT_DEAD_MAX_SIZE;
        Duration age = s.getDeadMaxAge() != null
                        && !s.getDeadMaxAge().isNegative()
                        && !s.getDeadMaxAge().isZero()
                ? s.getDeadMaxAge()
                : BusinessSettings.DEFAULT_DEAD_MAX_AGE;
        return new DeadSetBounds(size, age);
    }
}
