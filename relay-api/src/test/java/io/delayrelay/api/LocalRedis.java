package io.delayrelay.api;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;

import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/** The real Redis the relay-api tests talk to (REDIS_HOST/REDIS_PORT); fails loudly, saying how to start it. */
final class LocalRedis {

    private static final String HOST = System.getenv().getOrDefault("REDIS_HOST", "127.0.0.1");
    private static final int PORT = Integer.parseInt(System.getenv().getOrDefault("REDIS_PORT", "6379"));

    private LocalRedis() {}

    /** A started connection factory; the caller destroys it. */
    static LettuceConnectionFactory connect() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(HOST, PORT), 1000);
        } catch (IOException e) {
            throw new IllegalStateException(
                    "Redis is not reachable at " + HOST + ":" + PORT
                            + ": start it with 'scripts/services.sh up' (or set REDIS_HOST/REDIS_PORT)",
                    e);
        }
        LettuceConnectionFactory factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration(HOST, PORT));
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }
}
