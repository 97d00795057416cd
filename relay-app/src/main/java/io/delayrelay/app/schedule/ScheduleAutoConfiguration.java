package io.delayrelay.app.schedule;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.config.RelayAutoConfiguration;
import io.delayrelay.app.config.ScheduleSettings;
import io.delayrelay.app.engine.BusinessRelay;
import io.delayrelay.app.engine.RedisClock;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.data.redis.core.RedisTemplate;

/** Recurring schedules ({@code relay.schedules.*} and runtime-created ones): tended by every relay instance. */
@AutoConfiguration(after = RelayAutoConfiguration.class)
@ConditionalOnBean(RelayEngine.class)
public class ScheduleAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ScheduleAutoConfiguration.class);

    @Bean
    public ScheduleMetrics relayScheduleMetrics(ObjectProvider<MeterRegistry> registry) {
        return new ScheduleMetrics(registry.getIfAvailable());
    }

    @Bean
    public ScheduleStore relayScheduleStore(
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis) {
        return new ScheduleStore(redis);
    }

    @Bean
    public ScheduleTicker relayScheduleTicker(
            Environment environment, RelayEngine engine, ScheduleStore store, ScheduleMetrics metrics) {
        return new ScheduleTicker(store, metrics, configured(environment, engine), businesses(engine));
    }

    @Bean
    public Schedules relaySchedules(
            ScheduleStore store, ScheduleTicker ticker, ScheduleMetrics metrics, RedisClock clock, RelayEngine engine) {
        return new Schedules(store, ticker, metrics, clock, businesses(engine));
    }

    private static Supplier<Collection<BusinessSpec>> businesses(RelayEngine engine) {
        return () -> engine.relays().values().stream().map(BusinessRelay::spec).toList();
    }

    /**
     * The schedules declared in configuration, by business and name.
     *
     * @throws RelayConfigurationException naming schedule, property and value of every bad setting (an unknown
     *     business included)
     */
    static Map<String, Map<String, ScheduleDefinition>> configured(Environment environment, RelayEngine engine) {
        Map<String, ScheduleSettings> settings = new LinkedHashMap<>(Binder.get(environment)
                .bind("relay.schedules", Bindable.mapOf(String.class, ScheduleSettings.class))
                .orElseGet(Map::of));
        Set<String> businesses = engine.relays().keySet();
        List<ConfigProblem> problems = new ArrayList<>();
        ScheduleSettings.validate(settings, Set.copyOf(businesses), problems);
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
        List<ScheduleDefinition> defs = new ArrayList<>();
        settings.forEach((name, s) -> defs.add(ScheduleDefinition.of("relay.schedules." + name, name, s, false)));
        return ScheduleTicker.byBusiness(defs);
    }

    /** Follows a refresh of {@code relay.schedules.*} (Nacos, /actuator/refresh); a bad one is rejected whole. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(EnvironmentChangeEvent.class)
    static class Reload {

        @Bean
        ApplicationListener<EnvironmentChangeEvent> relaySchedulesReload(
                Environment environment,
                RelayEngine engine,
                ScheduleTicker ticker,
                ObjectProvider<RelayEvents> events) {
            return event -> {
                if (event.getKeys().stream()
                        .noneMatch(k -> k.startsWith("relay.schedules") || k.startsWith("relay.businesses"))) {
                    return;
                }
                Map<String, Map<String, ScheduleDefinition>> next;
                try {
                    next = configured(environment, engine);
                } catch (RelayConfigurationException e) {
                    log.warn("reloaded relay.schedules rejected, the running schedules stay: {}", e.getMessage());
                    RelayEvents listener = events.getIfAvailable();
                    if (listener != null) {
                        e.problems().forEach(p -> listener.configRejected(p.business(), p.message()));
                    }
                    return;
                }
                Map<String, DelayQueueKeys> keys = engine.relays().values().stream()
                        .map(BusinessRelay::spec)
                        .collect(Collectors.toMap(BusinessSpec::name, BusinessSpec::keys));
                ticker.reconfigure(next, keys);
                log.info(
                        "relay.schedules reloaded: {} schedule(s)",
                        next.values().stream().mapToInt(Map::size).sum());
            };
        }
    }
}
