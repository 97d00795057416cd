package io.delayrelay.app.engine;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeoutException;

import io.delayrelay.app.support.Exceptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.AmqpAuthenticationException;
import org.springframework.amqp.AmqpConnectException;
import org.springframework.amqp.AmqpTimeoutException;
import org.springframework.dao.QueryTimeoutException;
import org.springframework.data.redis.RedisConnectionFailureException;

/**
 * What a Redis or RabbitMQ failure at start means for the relay: the server is not reachable (yet), so the relay
 * waits for it not Ready; or it answered and refused the relay's credentials, user permissions or virtual host, a
 * configuration mistake that waiting does not fix, so start-up fails with one report. Decided from the exception
 * types and the servers' own error codes in the cause chain, which are stable (WRONGPASS, NOPERM, NOT_ALLOWED).
 */
enum ServiceFailure {
    /** Not reachable: refused connection, unknown host, timeout, dropped connection. */
    UNREACHABLE,
    /** The server answered and said no: wrong password or user, missing ACL permission or vhost. */
    REFUSED,
    /**
     * Redis only: the connection failed with neither a network error nor the server's answer in the cause chain.
     * Lettuce reports a refused AUTH this way when the server's reply and close race its handshake
     * ({@code IllegalStateException: RedisHandshakeHandler not registered}); the caller asks again at once, and a
     * second such failure counts as {@link #UNREACHABLE}.
     */
    UNCLEAR,
    /** Anything else: left to the caller. */
    OTHER;

    private static final String[] REDIS_REFUSALS = {
        "WRONGPASS", "NOAUTH", "NOPERM", "INVALID USERNAME-PASSWORD", "AUTH FAILED", "NO PASSWORD IS SET"
    };
    /**
     * Connection-level refusals only: a login refused arrives as {@link AmqpAuthenticationException}, an unknown
     * vhost as 530 NOT_ALLOWED. A channel-level 403 ACCESS_REFUSED (no configure permission for declare-exchange)
     * is a permission on one resource: logged, and start-up goes on (docs/operations.md).
     */
    private static final String[] RABBIT_REFUSALS = {"NOT_ALLOWED"};

    static final String REDIS_CHECK = "Check spring.data.redis.username and spring.data.redis.password (environment"
            + " SPRING_DATA_REDIS_USERNAME / SPRING_DATA_REDIS_PASSWORD, the chart's Secret): the user must exist, be"
            + " 'on', and its ACL must allow the relay's commands and keys (docs/operations.md, least-privilege ACL).";
    static final String RABBIT_CHECK = "Check spring.rabbitmq.username and spring.rabbitmq.password (environment"
            + " SPRING_RABBITMQ_USERNAME / SPRING_RABBITMQ_PASSWORD, the chart's Secret) and"
            + " spring.rabbitmq.virtual-host: the virtual host must exist and the user needs permissions on it"
            + " (write and read, configure too for declare-exchange).";

    private static final Logger log = LoggerFactory.getLogger(EngineStart.class);

    /**
     * At start: false after a WARN naming the server when {@code service} ("Redis" or "RabbitMQ") is not reachable
     * (the caller tries again later); throws {@link ServiceAccessException} when it refused the relay, and
     * {@code failure} itself otherwise.
     */
    static boolean waitOrThrow(RuntimeException failure, String service, String endpoint, Duration retry) {
        boolean redis = service.equals("Redis");
        ServiceFailure kind = redis ? ofRedis(failure) : ofRabbit(failure);
        if (kind == UNREACHABLE || kind == UNCLEAR) {
            log.warn(
                    "{} at {} is not reachable ({}): not relaying, readiness DOWN; trying again every {} ms",
                    service,
                    endpoint,
                    Exceptions.rootMessage(failure),
                    retry.toMillis());
            return false;
        }
        if (kind == REFUSED) {
            throw new ServiceAccessException(
                    service, endpoint, Exceptions.rootMessage(failure), redis ? REDIS_CHECK : RABBIT_CHECK, failure);
        }
        throw failure;
    }

    static ServiceFailure ofRedis(Throwable failure) {
        if (mentions(failure, REDIS_REFUSALS)) {
            return REFUSED;
        }
        boolean connection = false;
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof QueryTimeoutException
                    || t instanceof io.lettuce.core.RedisCommandTimeoutException
                    || network(t)) {
                return UNREACHABLE;
            }
            connection |= t instanceof RedisConnectionFailureException
                    || t instanceof io.lettuce.core.RedisConnectionException;
        }
        return connection ? UNCLEAR : OTHER;
    }

    static ServiceFailure ofRabbit(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof AmqpAuthenticationException) {
                return REFUSED;
            }
        }
        if (mentions(failure, RABBIT_REFUSALS)) {
            return REFUSED;
        }
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof AmqpConnectException || t instanceof AmqpTimeoutException || network(t)) {
                return UNREACHABLE;
            }
        }
        return OTHER;
    }

    private static boolean network(Throwable t) {
        return t instanceof ConnectException
                || t instanceof NoRouteToHostException
                || t instanceof UnknownHostException
                || t instanceof SocketTimeoutException
                || t instanceof TimeoutException;
    }

    private static boolean mentions(Throwable failure, String[] codes) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String text = String.valueOf(t.getMessage()).toUpperCase(Locale.ROOT);
            for (String code : codes) {
                if (text.contains(code)) {
                    return true;
                }
            }
        }
        return false;
    }
}
