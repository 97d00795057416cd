package io.delayrelay.app.support;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.rabbitmq.RabbitMQContainer;

/**
 * Where the tests find Redis and RabbitMQ: the local services (REDIS_HOST/REDIS_PORT, RABBIT_HOST/RABBIT_PORT,
 * default 127.0.0.1:6379 and :5672); when they are not reachable and Docker is, Testcontainers; otherwise the
 * test fails with a message saying how to start them. Never skips.
 */
public final class TestServices {

    public record Endpoint(String host, int port) {}

    private static Endpoint redis;
    private static Endpoint rabbit;

    private TestServices() {}

    public static synchronized Endpoint redis() {
        if (redis == null) {
            redis = resolve(
                    "Redis", env("REDIS_HOST", "127.0.0.1"), Integer.parseInt(env("REDIS_PORT", "6379")), () -> {
                        GenericContainer<?> c = new GenericContainer<>("redis:7-alpine").withExposedPorts(6379);
                        c.start();
                        return new Endpoint(c.getHost(), c.getMappedPort(6379));
                    });
        }
        return redis;
    }

    public static synchronized Endpoint rabbit() {
        if (rabbit == null) {
            rabbit = resolve(
                    "RabbitMQ", env("RABBIT_HOST", "127.0.0.1"), Integer.parseInt(env("RABBIT_PORT", "5672")), () -> {
                        RabbitMQContainer c = new RabbitMQContainer("rabbitmq:3.13-management");
                        c.start();
                        return new Endpoint(c.getHost(), c.getAmqpPort());
                    });
        }
        return rabbit;
    }

    private interface Starter {
        Endpoint start();
    }

    private static Endpoint resolve(String what, String host, int port, Starter container) {
        if (reachable(host, port)) {
            return new Endpoint(host, port);
        }
        boolean docker;
        try {
            docker = DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            docker = false;
        }
        if (docker) {
            return container.start();
        }
        throw new IllegalStateException(what + " is not reachable at " + host + ":" + port
                + " and no Docker engine is available for Testcontainers. Start the local services with "
                + "'scripts/services.sh up' (or set "
                + (what.equals("Redis") ? "REDIS_HOST/REDIS_PORT" : "RABBIT_HOST/RABBIT_PORT")
                + " to a running server). The tests need a real " + what + "; they never skip.");
    }

    private static boolean reachable(String host, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }
}
