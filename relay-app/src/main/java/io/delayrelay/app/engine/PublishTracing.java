package io.delayrelay.app.engine;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/**
 * Traces the relay's publishes of messages whose producer attached a trace context (per-message options). The
 * publisher asks only for messages that carry producer headers; {@link #NONE} (no tracing on the classpath, or no
 * tracer configured) costs one comparison per batch message. Implementations must be fast and must not throw.
 */
public interface PublishTracing {

    /** No tracing: nothing is started, nothing recorded. */
    PublishTracing NONE = (spec, message, routingKey) -> null;

    /**
     * Starts the observation of one publish attempt of {@code message}, just before it is written to the channel;
     * null when this message is not traced (e.g. it carries no valid {@code traceparent}).
     */
    PublishSpan start(BusinessSpec spec, DueMessage message, String routingKey);

    /** One publish attempt being observed, ended once with the broker's answer. */
    interface PublishSpan {
        void end(PublishOutcome outcome);
    }
}
