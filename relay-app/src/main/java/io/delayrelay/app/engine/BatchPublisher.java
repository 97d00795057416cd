package io.delayrelay.app.engine;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/**
 * The engine's port to the broker: publishes a batch and reports, per message and in order, what the broker
 * confirmed. {@code engine/amqp} implements it for RabbitMQ; a test or an application may supply its own bean.
 */
public interface BatchPublisher {

    /**
     * Publishes every message now (persistent, mandatory), on the calling thread, and returns at once; the future
     * completes once the broker confirmed every message, or at the business's publish timeout, so the caller can
     * pop the next batch meanwhile. Never fails for broker trouble: such messages come back
     * {@link PublishOutcome.Status#FAILED} (or {@link PublishOutcome.Status#NOT_SENT} when they never left).
     * Completing the future must not block: the settler reacts on its own threads.
     */
    CompletableFuture<List<PublishOutcome>> publish(BusinessSpec spec, List<DueMessage> batch);

    /** Checks at start that an exchange exists (or declares it); throws with a clear message when it cannot. */
    void prepareExchange(BusinessSpec spec);
}
