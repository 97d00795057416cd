package io.delayrelay.app.engine.wake;

import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;

import io.delayrelay.app.support.RedisClusters;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.pubsub.RedisPubSubListener;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Redis calls the keyspace wake-up source makes, on a single Redis ({@link StandaloneKeyspace}) or a Redis
 * Cluster ({@link ClusterKeyspace}). The source is written once against this interface, as ShedLock writes its lock
 * once against {@code InternalRedisLockTemplate}; {@link #open} picks the variant ({@link RedisClusters}).
 */
interface KeyspaceConnection extends AutoCloseable {

    /** Whether keyspace notifications can be heard through this factory: they need the Lettuce client. */
    static boolean supports(RedisConnectionFactory factory) {
        return factory instanceof LettuceConnectionFactory;
    }

    /**
     * Opens the connections the source needs on the factory's native client, {@code listener} hearing the pub/sub
     * one. Only for a factory it {@link #supports}.
     */
    static KeyspaceConnection open(RedisConnectionFactory factory, RedisPubSubListener<byte[], byte[]> listener) {
        LettuceConnectionFactory lettuce = (LettuceConnectionFactory) factory;
        if (RedisClusters.isCluster(factory)) {
            return new ClusterKeyspace((RedisClusterClient) lettuce.getNativeClient(), lettuce.getDatabase(), listener);
        }
        return new StandaloneKeyspace((RedisClient) lettuce.getNativeClient(), lettuce.getDatabase(), listener);
    }

    /** The database whose keyspace channels are heard ({@code __keyspace@<db>__:}). */
    int database();

    /** Subscribes the channels, on every master of a cluster (notifications are local to the key's node). */
    void subscribe(byte[][] channels);

    void unsubscribe(byte[][] channels);

    /** The earliest score of a shard key, read asynchronously; {@link ShardWakeups#NONE} when it is empty. */
    CompletionStage<Long> headOf(byte[] key);

    /** The cluster's masters as the pub/sub connection knows them (node ids); empty on a single Redis. */
    Set<String> masters();

    /** Reloads a cluster's topology, so masters added since are known; nothing on a single Redis. */
    void refreshTopology();

    /** The value of a configuration parameter on every master (one {@code CONFIG GET} each). */
    List<String> configGet(String parameter);

    /** Sets a configuration parameter on every master. */
    void configSet(String parameter, String value);

    /** Closes every connection; never throws. */
    @Override
    void close();
}
