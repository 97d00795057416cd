package io.delayrelay.app.config;

import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.engine.RelayEvents;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Hot reload of {@code relay.*} through Spring Cloud's refresh: Nacos (profile {@code nacos}) or any other config
 * source that publishes {@link EnvironmentChangeEvent}. Off with {@code relay.reload.enabled=false}.
 */
@AutoConfiguration(after = RelayAutoConfiguration.class)
@ConditionalOnClass(EnvironmentChangeEvent.class)
@ConditionalOnBean(RelayEngine.class)
@ConditionalOnProperty(prefix = "relay.reload", name = "enabled", matchIfMissing = true)
public class RelayReloadAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    public RelayConfigReloader relayConfigReloader(
            Environment environment,
            ObjectProvider<AbstractDelayedMsgScanTrigger> triggers,
            RelayEngine engine,
            RelayEvents events) {
        return new RelayConfigReloader(environment, triggers, engine, events);
    }

    @Bean
    public ApplicationListener<EnvironmentChangeEvent> relayEnvironmentChangeListener(RelayConfigReloader reloader) {
        return event -> reloader.onChange(event.getKeys());
    }
}
