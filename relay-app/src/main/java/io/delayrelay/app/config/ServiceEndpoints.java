package io.delayrelay.app.config;

import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Redis and RabbitMQ as the relay's start-up log lines and failure reports name them: address, and the user (and
 * vhost) the relay connects as, so an operator sees at once which Secret or ACL user is meant. Never a password.
 */
final class ServiceEndpoints {

    private ServiceEndpoints() {}

    static String redis(RedisConnectionFactory factory) {
        if (!(factory instanceof LettuceConnectionFactory lettuce)) {
            return factory.getClass().getSimpleName();
        }
        String user = lettuce.getStandaloneConfiguration().getUsername();
        String where;
        if (lettuce.getClusterConfiguration() != null) {
            where = "cluster " + lettuce.getClusterConfiguration().getClusterNodes();
            user = lettuce.getClusterConfiguration().getUsername();
        } else if (lettuce.getSentinelConfiguration() != null) {
            where = "sentinels " + lettuce.getSentinelConfiguration().getSentinels() + " (master "
                    + lettuce.getSentinelConfiguration().getMaster().getName() + ")";
            user = lettuce.getSentinelConfiguration().getUsername();
        } else {
            where = lettuce.getHostName() + ":" + lettuce.getPort();
        }
        return where + " as user '" + (user == null || user.isEmpty() ? "default" : user) + "'";
    }

    static String rabbit(ConnectionFactory factory) {
        return factory.getHost() + ":" + factory.getPort() + " (vhost '" + factory.getVirtualHost() + "') as user '"
                + factory.getUsername() + "'";
    }
}
