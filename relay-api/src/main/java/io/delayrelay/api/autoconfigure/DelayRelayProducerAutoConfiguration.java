package io.delayrelay.api.autoconfigure;

import io.delayrelay.api.DelayedMessageProducer;
import io.delayrelay.api.RedisDelayedMessageProducer;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/** Auto-configures a {@link DelayedMessageProducer} when Spring Data Redis has a connection factory. */
@AutoConfiguration(afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass(RedisConnectionFactory.class)
@ConditionalOnProperty(prefix = "relay.producer", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(DelayRelayProducerProperties.class)
public class DelayRelayProducerAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(DelayedMessageProducer.class)
    @ConditionalOnBean(RedisConnectionFactory.class)
    public RedisDelayedMessageProducer delayedMessageProducer(
            RedisConnectionFactory connectionFactory, DelayRelayProducerProperties properties) {
        return RedisDelayedMessageProducer.builder(connectionFactory)
                .defaultShards(properties.getDefaultShards())
                .metaCacheTtl(properties.getMetaCacheTtl())
                .keys(properties::keysFor)
                .build();
    }
}
