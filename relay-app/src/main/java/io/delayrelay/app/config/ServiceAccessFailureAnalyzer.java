package io.delayrelay.app.config;

import io.delayrelay.app.engine.ServiceAccessException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a Redis or RabbitMQ refusal at start (wrong password or user, ACL, missing vhost) into one short report
 * naming the server, the user and what to check, instead of a stack trace of a hundred lines with the server's
 * answer deep inside.
 */
public class ServiceAccessFailureAnalyzer extends AbstractFailureAnalyzer<ServiceAccessException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, ServiceAccessException cause) {
        return new FailureAnalysis(cause.getMessage(), cause.check(), cause);
    }
}
