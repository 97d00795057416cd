package io.delayrelay.app.engine;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.concurrent.TimeoutException;

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

    static ServiceFailure ofRedis(Throwable failure) {
        if (mentions(failure, REDIS_REFUSALS)) {
            return REFUSED;
        }
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof RedisConnectionFailureException
                    || t instanceof QueryTimeoutException
                    || t instanceof io.lettuce.core.RedisConnectionException
                    || t instanceof io.lettuce.core.RedisCommandTimeoutException
                    || network(t)) {
                return UNREACHABLE;
            }
        }
        return OTHER;
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
