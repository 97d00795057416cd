package io.delayrelay.app.engine;

import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/** Publishes a batch and reports, per message and in order, what the broker confirmed. */
public interface BatchPublisher {

    /**
     * Publishes every message (persistent, mandatory) and waits at most the business's publish timeout for the
     * confirms. Never throws for broker trouble: such messages come back {@link PublishOutcome.Status#FAILED}.
     */
    List<PublishOutcome> publish(BusinessSpec spec, List<DueMessage> batch);

    /** Checks at start that an exchange exists (or declares it); throws with a clear message when it cannot. */
    void prepareExchange(BusinessSpec spec);
}
