package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import org.jspecify.annotations.Nullable;

/**
 * Whether this instance can relay one business now: the condition for holding its seat in the fleet's division
 * ({@link ShardDivision}). An instance that holds a seat and does not relay would leave its share of the shards
 * unpopped for as long as that lasts, so it gives the seat up while
 * <ul>
 *   <li>its own configuration pauses the business ({@code paused: true}; an operator's fleet-wide pause is not this
 *       instance's fault, and every instance keeps its seat through it);</li>
 *   <li>no publish has been answered by the broker for {@code give-up-after} although one was sent (broker
 *       unreachable from this instance, every batch NOT_SENT, confirms that never come);</li>
 *   <li>every worker has been inside one pop-and-publish for longer than {@code give-up-after} plus the lead (a
 *       wedged pool: a socket write that never returns, a Redis call that hangs).</li>
 * </ul>
 * Fed by the workers and the settler (lock-free), read by the seat renewal. Thread-safe.
 */
final class RelayAbility {

    private final LongSupplier nanos;
    /** When the oldest publish not answered since the last answer was sent; 0 while none is. */
    private volatile long unansweredSince;
    /** Workers inside a pop-and-publish, by index: since when. */
    private final ConcurrentHashMap<Integer, Long> busySince = new ConcurrentHashMap<>();

    RelayAbility(LongSupplier nanos) {
        this.nanos = nanos;
    }

    /** A batch is handed to the publisher. */
    void publishing() {
        if (unansweredSince == 0) {
            unansweredSince = nanos.getAsLong();
        }
    }

    /** The broker answered a batch (confirmed, returned or nacked any of it): it is reachable from here. */
    void answered() {
        unansweredSince = 0;
    }

    /** The broker answered a probe ({@link BatchPublisher#reachable}): publishes are tried again. */
    void reachableAgain() {
        unansweredSince = 0;
    }

    /** Worker {@code index} starts a pop and its publish. */
    void busy(int index) {
        busySince.put(index, nanos.getAsLong());
    }

    /** Worker {@code index} is done with its pop and publish, or sleeps. */
    void idle(int index) {
        busySince.remove(index);
    }

    /**
     * Why this instance cannot relay the business now, or null when it can.
     *
     * @param configPaused whether this instance's own configuration pauses the business
     * @param workers      the number of workers the business runs
     * @param giveUpAfter  how long publishes may go unanswered, or all workers stay busy, before it gives up
     * @param lead         the business's lead (a pop-ahead batch waits up to it inside one pop-and-publish)
     */
    @Nullable
    Reason unable(boolean configPaused, int workers, Duration giveUpAfter, Duration lead) {
        if (configPaused) {
            return Reason.PAUSED_HERE;
        }
        long now = nanos.getAsLong();
        long since = unansweredSince;
        if (since != 0 && now - since > giveUpAfter.toNanos()) {
            return Reason.BROKER;
        }
        long bound = giveUpAfter.plus(lead).toNanos();
        int stuck = 0;
        for (Long started : busySince.values()) {
            if (now - started > bound) {
                stuck++;
            }
        }
        return workers > 0 && stuck >= workers ? Reason.WEDGED : null;
    }

    /** Why an instance gave up its seat. */
    enum Reason {
        PAUSED_HERE("paused by this instance's own configuration (relay.businesses.<name>.paused)"),
        BROKER("no publish answered by RabbitMQ within give-up-after"),
        WEDGED("every worker stuck in one pop-and-publish for longer than give-up-after plus the lead");

        private final String text;

        Reason(String text) {
            this.text = text;
        }

        /** The reason as logged and shown in the ops view. */
        String text() {
            return text;
        }
    }
}
