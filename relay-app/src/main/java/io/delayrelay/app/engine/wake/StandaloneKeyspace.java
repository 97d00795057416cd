package io.delayrelay.app.engine.wake;

import java.util.List;
import java.util.Set;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubListener;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;

/** The keyspace source's Redis calls on a single Redis: one pub/sub, one head-read and one config connection. */
final class StandaloneKeyspace
        extends OpenedKeyspace<
                StatefulRedisConnection<String, String>,
                StatefulRedisConnection<byte[], byte[]>,
                StatefulRedisPubSubConnection<byte[], byte[]>> {

    StandaloneKeyspace(RedisClient client, int database, RedisPubSubListener<byte[], byte[]> listener) {
        super(
                database,
                () -> client.connect(StringCodec.UTF8),
                () -> client.connect(ByteArrayCodec.INSTANCE),
                h -> {
                    h.sync().select(database);
                    return h.async();
                },
                () -> client.connectPubSub(ByteArrayCodec.INSTANCE));
        pubSub.addListener(listener);
    }

    @Override
    public void subscribe(byte[][] channels) {
        pubSub.sync().subscribe(channels);
    }

    @Override
    public void unsubscribe(byte[][] channels) {
        pubSub.sync().unsubscribe(channels);
    }

    @Override
    public Set<String> masters() {
        return Set.of();
    }

    @Override
    public void refreshTopology() {}

    @Override
    public List<String> configGet(String parameter) {
        return List.of(config.sync().configGet(parameter).getOrDefault(parameter, ""));
    }

    @Override
    public void configSet(String parameter, String value) {
        config.sync().configSet(parameter, value);
    }
}
