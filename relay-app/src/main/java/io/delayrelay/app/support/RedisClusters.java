package io.delayrelay.app.support;

import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Whether the relay's Redis is a Redis Cluster: asked here and nowhere else. On a cluster the keys of different
 * slots never meet in one script call, and keyspace notifications are local to each master.
 */
public final class RedisClusters {

    private RedisClusters() {}

    /** A Lettuce connection factory configured for a cluster. */
    public static boolean isCluster(RedisConnectionFactory factory) {
        return factory instanceof LettuceConnectionFactory lettuce && lettuce.isClusterAware();
    }
}
