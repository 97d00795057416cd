package io.delayrelay.app.config;

import io.delayrelay.app.trigger.RelayConfigurationException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns an invalid relay configuration into a short start-up report listing every problem. */
public class RelayFailureAnalyzer extends AbstractFailureAnalyzer<RelayConfigurationException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, RelayConfigurationException cause) {
        return new FailureAnalysis(
                cause.getMessage(),
                "Fix the listed relay.* properties (or trigger beans) and start again. Property reference: docs/configuration.md.",
                cause);
    }
}
