package io.delayrelay.app.engine.wake;

import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;

import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.async.RedisSortedSetAsyncCommands;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;

/**
 * What both {@link KeyspaceConnection} variants hold alike: the database, a config, a head-read and a pub/sub
 * connection, opened in that order (the ones already open are closed when a later one fails), the head read and
 * closing. The variants add how they subscribe and reach the masters.
 *
 * @param <C> the config connection
 * @param <H> the head-read connection
 * @param <P> the pub/sub connection
 */
abstract class OpenedKeyspace<
                C extends StatefulConnection<String, String>,
                H extends StatefulConnection<byte[], byte[]>,
                P extends StatefulRedisPubSubConnection<byte[], byte[]>>
        implements KeyspaceConnection {

    private final int database;
    final C config;
    private final H heads;
    private final RedisSortedSetAsyncCommands<byte[], byte[]> headCommands;
    final P pubSub;

    /**
     * @param headCommands prepares the opened head-read connection (a failure closes it too) and gives its commands
     */
    OpenedKeyspace(
            int database,
            Supplier<C> config,
            Supplier<H> heads,
            Function<H, RedisSortedSetAsyncCommands<byte[], byte[]>> headCommands,
            Supplier<P> pubSub) {
        this.database = database;
        this.config = config.get();
        H h = null;
        try {
            h = heads.get();
            this.heads = h;
            this.headCommands = headCommands.apply(h);
            this.pubSub = pubSub.get();
        } catch (RuntimeException e) {
            Connections.closeQuietly(h, this.config);
            throw e;
        }
    }

    @Override
    public int database() {
        return database;
    }

    @Override
    public CompletionStage<Long> headOf(byte[] key) {
        return Connections.earliest(headCommands.zrangeWithScores(key, 0, 0));
    }

    @Override
    public void close() {
        Connections.closeQuietly(pubSub, heads, config);
    }
}
