package io.delayrelay.app.engine.wake;

import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubListener;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;

/** The keyspace source's Redis calls on a single Redis: one pub/sub, one head-read and one config connection. */
final class StandaloneKeyspace implements KeyspaceConnection {

    private final int database;
    private final StatefulRedisConnection<String, String> config;
    private final StatefulRedisConnection<byte[], byte[]> heads;
    private final StatefulRedisPubSubConnection<byte[], byte[]> pubSub;
    private final RedisAsyncCommands<byte[], byte[]> headCommands;

    StandaloneKeyspace(RedisClient client, int database, RedisPubSubListener<byte[], byte[]> listener) {
        this.database = database;
        this.config = client.connect(StringCodec.UTF8);
        StatefulRedisConnection<byte[], byte[]> h = null;
        try {
            h = client.connect(ByteArrayCodec.INSTANCE);
            h.sync().select(database);
            this.heads = h;
            this.headCommands = h.async();
            this.pubSub = client.connectPubSub(ByteArrayCodec.INSTANCE);
        } catch (RuntimeException e) {
            Connections.closeQuietly(h, config);
            throw e;
        }
        pubSub.addListener(listener);
    }

    @Override
    public int database() {
        return database;
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
    public CompletionStage<Long> headOf(byte[] key) {
        return Connections.earliest(headCommands.zrangeWithScores(key, 0, 0));
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

    @Override
    public void close() {
        Connections.closeQuietly(pubSub, heads, config);
    }
}
