package io.delayrelay.app.config;

import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;

/** The businesses resolved from configuration and trigger beans at start-up. */
public record RelayBusinesses(List<BusinessSpec> specs) {

    public RelayBusinesses {
        specs = List.copyOf(specs);
    }
}
