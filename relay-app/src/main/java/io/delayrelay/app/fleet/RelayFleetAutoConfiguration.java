package io.delayrelay.app.fleet;

import java.net.InetAddress;
import java.net.UnknownHostException;

import io.delayrelay.app.config.RelayAutoConfiguration;
import io.delayrelay.app.engine.RelayEngine;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.RedisTemplate;

/** Fleet-wide operator pause and instance heartbeats, stored in Redis beside the business's keys. */
@AutoConfiguration(after = RelayAutoConfiguration.class)
@ConditionalOnProperty(prefix = "relay", name = "enabled", matchIfMissing = true)
@ConditionalOnBean(RelayEngine.class)
@EnableConfigurationProperties(RelayFleetProperties.class)
public class RelayFleetAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    public OperatorPauseStore relayOperatorPauseStore(
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis) {
        return new OperatorPauseStore(redis);
    }

    @Bean
    @ConditionalOnMissingBean
    public FleetPause relayFleetPause(RelayEngine engine, OperatorPauseStore store, RelayFleetProperties properties) {
        return new FleetPause(engine, store, properties.getPauseRecheckInterval());
    }

    @Bean
    @ConditionalOnMissingBean
    public InstanceHeartbeat relayInstanceHeartbeat(
            RelayEngine engine,
            @Qualifier(RelayAutoConfiguration.RELAY_REDIS_TEMPLATE) RedisTemplate<byte[], byte[]> redis,
            RelayFleetProperties properties) {
        String host = hostName();
        String id = properties.getInstanceId() != null
                        && !properties.getInstanceId().isBlank()
                ? properties.getInstanceId()
                : host + "-" + ProcessHandle.current().pid();
        String version = RelayFleetAutoConfiguration.class.getPackage().getImplementationVersion();
        RelayInstance self =
                new RelayInstance(id, host, version == null ? "dev" : version, System.currentTimeMillis(), 0);
        return new InstanceHeartbeat(engine, redis, self, properties.getHeartbeatInterval());
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            String env = System.getenv("HOSTNAME");
            return env == null || env.isBlank() ? "unknown-host" : env;
        }
    }
}
