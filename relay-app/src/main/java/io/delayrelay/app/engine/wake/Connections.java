package io.delayrelay.app.engine.wake;

import java.util.List;
import java.util.concurrent.CompletionStage;

import io.lettuce.core.ScoredValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** What both {@link KeyspaceConnection} variants do alike: read a head reply, close connections quietly. */
final class Connections {

    private static final Logger log = LoggerFactory.getLogger(KeyspaceWakeSource.class);

    private Connections() {}

    /** The earliest score of a {@code ZRANGE key 0 0 WITHSCORES} reply; {@link ShardWakeups#NONE} when empty. */
    static CompletionStage<Long> earliest(CompletionStage<List<ScoredValue<byte[]>>> head) {
        return head.thenApply(
                h -> h.isEmpty() ? ShardWakeups.NONE : ShardPeeks.dueMs(h.get(0).getScore()));
    }

    /** Closes each connection that is there; a failure is logged at debug. */
    static void closeQuietly(AutoCloseable... connections) {
        for (AutoCloseable c : connections) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    log.debug("closing a keyspace notification connection failed", e);
                }
            }
        }
    }
}
