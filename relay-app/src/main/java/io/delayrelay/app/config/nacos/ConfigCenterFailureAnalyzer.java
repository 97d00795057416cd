package io.delayrelay.app.config.nacos;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Reports a config center the relay could not read at start: the one-line cause and what to do. */
public class ConfigCenterFailureAnalyzer extends AbstractFailureAnalyzer<ConfigCenterUnavailableException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, ConfigCenterUnavailableException cause) {
        return new FailureAnalysis(
                cause.getMessage(),
                "Start the Nacos server or fix NACOS_ADDR, NACOS_NAMESPACE, "
                        + "NACOS_DATA_ID, NACOS_GROUP; or set relay.nacos.optional=true to start on local configuration "
                        + "(docs/configuration.md: Nacos).",
                cause);
    }
}
