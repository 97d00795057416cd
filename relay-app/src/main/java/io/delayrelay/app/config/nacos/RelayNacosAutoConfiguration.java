package io.delayrelay.app.config.nacos;

import com.alibaba.cloud.nacos.NacosConfigManager;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.context.environment.EnvironmentChangeEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * With a Nacos import (profile {@code nacos}): keeps Nacos's values above local files after every refresh and
 * watches the connection to the server.
 */
@AutoConfiguration(afterName = "com.alibaba.cloud.nacos.NacosConfigAutoConfiguration")
@ConditionalOnClass(
        name = {
            "com.alibaba.cloud.nacos.NacosConfigManager",
            "org.springframework.cloud.context.environment.EnvironmentChangeEvent"
        })
@Conditional(RelayNacosAutoConfiguration.OnNacosImport.class)
@EnableConfigurationProperties(RelayNacosProperties.class)
public class RelayNacosAutoConfiguration {

    /** Runs before the relay's reload listener: a data id that appeared after start is placed above local files. */
    @Bean
    public ApplicationListener<EnvironmentChangeEvent> relayNacosPrecedence(ConfigurableEnvironment environment) {
        return new PrecedenceKeeper(environment);
    }

    @Bean
    @ConditionalOnBean(NacosConfigManager.class)
    NacosConnectionWatcher relayNacosConnectionWatcher(
            NacosConfigManager configManager, ConfigurableEnvironment environment, RelayNacosProperties properties) {
        return new NacosConnectionWatcher(
                NacosServer.of(configManager),
                NacosImport.serverAddr(environment),
                NacosImport.of(environment),
                properties.getCheckInterval());
    }

    static final class PrecedenceKeeper implements ApplicationListener<EnvironmentChangeEvent>, Ordered {

        private final ConfigurableEnvironment environment;

        PrecedenceKeeper(ConfigurableEnvironment environment) {
            this.environment = environment;
        }

        @Override
        public void onApplicationEvent(EnvironmentChangeEvent event) {
            NacosPrecedence.apply(environment, NacosImport.of(environment));
        }

        @Override
        public int getOrder() {
            return Ordered.HIGHEST_PRECEDENCE;
        }
    }

    static final class OnNacosImport extends SpringBootCondition {

        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return NacosImport.active(context.getEnvironment())
                    ? ConditionOutcome.match("spring.config.import has a nacos: location")
                    : ConditionOutcome.noMatch("no nacos: location in spring.config.import");
        }
    }
}
