package io.delayrelay.app.engine;

import java.net.ConnectException;

import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.RedisConnectionFailureException;

import static org.assertj.core.api.Assertions.assertThat;

/** How a Redis failure at start is read: from the exception types and the server's codes in the cause chain. */
class ServiceFailureTest {

    private static RuntimeException failedConnect(Throwable cause) {
        return new RedisConnectionFailureException(
                "Unable to connect to Redis", new RedisConnectionException("Unable to connect to 127.0.0.1:1", cause));
    }

    @Test
    void aHandshakeBrokenWithoutAnAnswerIsUnclearAndAskedAgain() {
        assertThat(ServiceFailure.ofRedis(
                        failedConnect(new IllegalStateException("RedisHandshakeHandler not registered"))))
                .isEqualTo(ServiceFailure.UNCLEAR);
    }

    @Test
    void aNetworkErrorAnywhereInTheChainIsUnreachable() {
        assertThat(ServiceFailure.ofRedis(failedConnect(new ConnectException("Connection refused"))))
                .isEqualTo(ServiceFailure.UNREACHABLE);
        assertThat(ServiceFailure.ofRedis(new RedisCommandTimeoutException("Command timed out after 1 second(s)")))
                .isEqualTo(ServiceFailure.UNREACHABLE);
    }

    @Test
    void theServersRefusalWinsOverTheConnectionError() {
        assertThat(ServiceFailure.ofRedis(failedConnect(new io.lettuce.core.RedisCommandExecutionException(
                        "WRONGPASS invalid username-password pair or user is disabled."))))
                .isEqualTo(ServiceFailure.REFUSED);
    }

    @Test
    void anythingElseIsLeftToTheCaller() {
        assertThat(ServiceFailure.ofRedis(new IllegalArgumentException("bad"))).isEqualTo(ServiceFailure.OTHER);
    }
}
