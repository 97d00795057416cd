package io.delayrelay.app.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import org.springframework.util.FileSystemUtils;

/**
 * The setup the cold tier's fault tests share: the cold business they run ({@code cold-after: 10s}, two threads,
 * {@code max-idle: 200ms}) and, for the Redis-crash tests (ColdRedisRestartTest, ColdDemotionRedisRestartTest), a
 * Redis server of the test's own that keeps an AOF in a fresh directory under target/, and a relay's properties
 * pointing at that server. Where entries are in such a Redis is {@link ColdPlaces}'s.
 */
final class ColdFaults {

    private ColdFaults() {}

    /** Adds the cold business ({@code shards} shards, routing key {@code due}) to a relay's properties. */
    static Map<String, Object> coldBusiness(Map<String, Object> props, String business, String exchange, int shards) {
        return RelayTestKit.business(
                props,
                business,
                exchange,
                "due",
                "shards",
                shards,
                "threads",
                2,
                "max-idle",
                "200ms",
                "cold-after",
                "10s");
    }

    /** {@code target/<name>-<pid>} (absolute), emptied: a directory of this JVM's own for its servers. */
    static Path freshDirectory(String name) throws IOException {
        Path dir = Path.of("target", name + "-" + ProcessHandle.current().pid()).toAbsolutePath();
        FileSystemUtils.deleteRecursively(dir);
        Files.createDirectories(dir);
        return dir;
    }

    /**
     * Starts a Redis server with {@code appendonly yes} in {@code dir} ({@code port} 0: one the OS chooses), with the
     * {@code more} arguments after.
     */
    static PrivateRedis aofServer(int port, Path dir, String... more) {
        List<String> args = new ArrayList<>(List.of("--appendonly", "yes"));
        args.addAll(List.of(more));
        return PrivateRedis.builder()
                .port(port)
                .dir(dir)
                .args(args.toArray(String[]::new))
                .start();
    }

    /** A relay's properties: the kit's, with the Redis at {@code redis} and the cold business. */
    static Map<String, Object> relayProperties(
            RelayTestKit kit, PrivateRedis redis, String business, String exchange, int shards) {
        Map<String, Object> props = kit.baseProperties();
        props.put("spring.data.redis.host", "127.0.0.1");
        props.put("spring.data.redis.port", redis.port());
        return coldBusiness(props, business, exchange, shards);
    }
}
