package io.delayrelay.app.engine.wake;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubListener;

/**
 * The keyspace source's Redis calls on a Redis Cluster. Notifications are local to the node that holds the key, so
 * channels are subscribed and configuration read on every master ({@code upstream()}): those the client knows now.
 * Lettuce does not subscribe masters it learns of later; the source subscribes again when {@link #masters} grew.
 */
final class ClusterKeyspace
        extends OpenedKeyspace<
                StatefulRedisClusterConnection<String, String>,
                StatefulRedisClusterConnection<byte[], byte[]>,
                StatefulRedisClusterPubSubConnection<byte[], byte[]>> {

    private final RedisClusterClient client;

    ClusterKeyspace(RedisClusterClient client, int database, RedisPubSubListener<byte[], byte[]> listener) {
        super(
                database,
                () -> client.connect(StringCodec.UTF8),
                () -> client.connect(ByteArrayCodec.INSTANCE),
                StatefulRedisClusterConnection::async,
                () -> client.connectPubSub(ByteArrayCodec.INSTANCE));
        this.client = client;
        // keyspace notifications are local to the node that holds the key: hear every master's
        pubSub.setNodeMessagePropagation(true);
        pubSub.addListener(listener);
    }

    @Override
    public void subscribe(byte[][] channels) {
        pubSub.sync().upstream().commands().subscribe(channels);
    }

    @Override
    public void unsubscribe(byte[][] channels) {
        pubSub.sync().upstream().commands().unsubscribe(channels);
    }

    @Override
    public Set<String> masters() {
        Set<String> ids = new HashSet<>();
        for (RedisClusterNode node : pubSub.getPartitions()) {
            if (node.is(RedisClusterNode.NodeFlag.UPSTREAM)) {
                ids.add(node.getNodeId());
            }
        }
        return ids;
    }

    @Override
    public void refreshTopology() {
        client.refreshPartitions();
    }

    @Override
    public List<String> configGet(String parameter) {
        List<String> values = new ArrayList<>();
        config.sync()
                .upstream()
                .commands()
                .configGet(parameter)
                .forEach(m -> values.add(m.getOrDefault(parameter, "")));
        return values;
    }

    @Override
    public void configSet(String parameter, String value) {
        config.sync().upstream().commands().configSet(parameter, value);
    }
}
