package io.delayrelay.app.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.env.Environment;

/**
 * Follows configuration changes at runtime: after a refresh (Spring Cloud's {@code EnvironmentChangeEvent}, e.g.
 * from Nacos) that touched {@code relay.*}, re-resolves every business and applies the result to the engine. A
 * business whose new settings are invalid keeps its previous ones; each problem is logged and counted.
 */
public class RelayConfigReloader {

    private static final Logger log = LoggerFactory.getLogger(RelayConfigReloader.class);

    private final Environment environment;
    private final ObjectProvider<AbstractDelayedMsgScanTrigger> triggers;
    private final RelayEngine engine;
    private final RelayEvents events;

    public RelayConfigReloader(
            Environment environment,
            ObjectProvider<AbstractDelayedMsgScanTrigger> triggers,
            RelayEngine engine,
            RelayEvents events) {
        this.environment = environment;
        this.triggers = triggers;
        this.engine = engine;
        this.events = events;
    }

    /** Called with the keys a refresh changed. */
    public void onChange(Set<String> changedKeys) {
        if (changedKeys.stream().anyMatch(k -> k.startsWith("relay."))) {
            reload();
        }
    }

    /**
     * Re-resolves the businesses and applies them. Returns the problems that were rejected. An unknown
     * {@code relay.*} key rejects the whole reload (nothing is applied, the running settings stay), reported in one
     * message like at start: a misspelt key in the config center must not half-apply a change.
     */
    public synchronized List<ConfigProblem> reload() {
        List<ConfigProblem> unknown = UnknownRelayKeys.fromClasspath().problems(environment);
        if (!unknown.isEmpty()) {
            log.warn(
                    "reloaded relay configuration rejected, every business keeps its running settings: {}",
                    new RelayConfigurationException(unknown).getMessage());
            unknown.forEach(this::count);
            return unknown;
        }
        BusinessSpecResolver.Resolution resolution = BusinessSpecResolver.resolveAll(
                environment, triggers.orderedStream().toList());
        List<ConfigProblem> all = new ArrayList<>(resolution.allProblems());
        List<BusinessSpec> specs = resolution.specs();
        all.addAll(engine.apply(specs, resolution.problems().keySet()));
        all.forEach(this::reject);
        if (all.isEmpty()) {
            log.info(
                    "relay configuration reloaded: {} business(es) {}",
                    specs.size(),
                    specs.stream().map(BusinessSpec::name).toList());
        }
        return all;
    }

    private void reject(ConfigProblem problem) {
        log.warn(
                "business={}: reloaded configuration rejected, previous settings kept: {}",
                problem.business(),
                problem.message());
        count(problem);
    }

    private void count(ConfigProblem problem) {
        try {
            events.configRejected(problem.business(), problem.message());
        } catch (RuntimeException e) {
            log.debug("relay event listener failed", e);
        }
    }
}
