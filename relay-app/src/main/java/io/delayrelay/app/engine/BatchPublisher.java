package io.delayrelay.app.engine;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;

/** Publishes a batch and reports, per message and in order, what the broker confirmed. */
public interface BatchPublisher {

    /**
     * Publishes every message (persistent, mandatory) and waits at most the business's publish timeout for the
     * confirms. Never throws for broker trouble: such messages come back {@link PublishOutcome.Status#FAILED}.
     */
    List<PublishOutcome> publish(BusinessSpec spec, List<DueMessage> batch);

    /**
     * Publishes every message now, on the calling thread, and returns the outcomes once the broker confirmed them
     * (or the publish timeout passed), so the caller can pop the next batch meanwhile. Slow follow-up work runs on
     * {@code executor}, never on the broker connection's thread. The default publishes synchronously.
     */
    default CompletableFuture<List<PublishOutcome>> publishAsync(
            BusinessSpec spec, List<DueMessage> batch, Executor executor) {
        return CompletableFuture.completedFuture(publish(spec, batch));
    }

    /** Checks at start that an exchange exists (or declares it); throws with a clear message when it cannot. */
    void prepareExchange(BusinessSpec spec);
}
