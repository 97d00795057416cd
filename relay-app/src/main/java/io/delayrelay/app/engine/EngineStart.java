package io.delayrelay.app.engine;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.delayrelay.app.support.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The engine's start-up wait: Redis and RabbitMQ must answer before a business relays. A server not reachable yet is
 * waited for on a thread of its own, named in a WARN every retry period (readiness stays down meanwhile). A server
 * that answers and refuses the relay fails the start ({@link ServiceFailure} tells the two apart).
 */
final class EngineStart {

    private static final Logger log = LoggerFactory.getLogger(EngineStart.class);

    /**
     * The checks and the start itself, in the order {@link #connect} runs them.
     *
     * @param running          whether the engine relays already (a retry then has nothing to do)
     * @param checkExchanges   checks the exchanges; throws when one is missing or RabbitMQ does not answer
     * @param recordTopologies records every business's shard count in {@code K:meta}
     * @param begin            starts relaying: both servers answered
     */
    record Steps(BooleanSupplier running, Runnable checkExchanges, Runnable recordTopologies, Runnable begin) {}

    private final Object lock;
    private final RedisConnectionFactory redis;
    private final RelayEngine.Settings settings;
    private final Steps steps;
    private ScheduledExecutorService starter;

    /** Runs {@code steps} under {@code lock}: the engine's monitor, so a retry never meets a reload or a stop. */
    EngineStart(Object lock, RedisConnectionFactory redis, RelayEngine.Settings settings, Steps steps) {
        this.lock = lock;
        this.redis = redis;
        this.settings = settings;
        this.steps = steps;
    }

    /**
     * Begins at once when both servers answer. Otherwise returns, and tries again every start-retry on a thread of
     * its own. Called under the lock.
     *
     * @throws ServiceAccessException when a server refuses the relay
     */
    void start() {
        if (connect()) {
            steps.begin().run();
            return;
        }
        long every = Math.max(10, settings.startRetry().toMillis());
        starter = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("relay-start"));
        starter.scheduleWithFixedDelay(this::retry, every, every, TimeUnit.MILLISECONDS);
    }

    /** Whether the start waits for a server. */
    boolean waiting() {
        return starter != null;
    }

    /** Stops waiting (the engine is destroyed before it ever ran). Called under the lock. */
    void cancel() {
        if (starter != null) {
            starter.shutdownNow();
            starter = null;
        }
    }

    /** A scheduled task: must not throw. A refusal now is logged (the process is up already) and tried again. */
    private void retry() {
        synchronized (lock) {
            if (steps.running().getAsBoolean() || starter == null) {
                return;
            }
            try {
                if (connect()) {
                    steps.begin().run();
                    starter.shutdown();
                    starter = null;
                }
            } catch (RuntimeException e) {
                log.error(
                        "delay-relay cannot start, readiness DOWN; trying again every {} ms: {}",
                        settings.startRetry().toMillis(),
                        e.getMessage());
            }
        }
    }

    /**
     * Checks that Redis and RabbitMQ answer and the exchanges exist, and records the shard counts. False (after a
     * WARN naming the server) when one is not reachable.
     */
    private boolean connect() {
        String service = "Redis";
        try {
            pingRedis();
            service = "RabbitMQ";
            steps.checkExchanges().run();
            service = "Redis";
            steps.recordTopologies().run();
            return true;
        } catch (RuntimeException e) {
            boolean onRedis = service.equals("Redis");
            return ServiceFailure.waitOrThrow(
                    e, service, onRedis ? settings.redisEndpoint() : settings.rabbitEndpoint(), settings.startRetry());
        }
    }

    /** One ping; asked again at once when the first failure is {@link ServiceFailure#UNCLEAR}, not waited on. */
    private void pingRedis() {
        try (RedisConnection connection = redis.getConnection()) {
            connection.ping();
        } catch (RuntimeException first) {
            if (ServiceFailure.ofRedis(first) != ServiceFailure.UNCLEAR) {
                throw first;
            }
            log.debug("Redis connection failed without a network error or an answer; asking again at once", first);
            try (RedisConnection connection = redis.getConnection()) {
                connection.ping();
            }
        }
    }
}
