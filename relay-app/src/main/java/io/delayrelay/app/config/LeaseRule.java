package io.delayrelay.app.config;

import java.time.Duration;
import java.util.Optional;

import io.delayrelay.app.trigger.ConfigProblem;

/**
 * How long a business's lease must be at least: a popped entry's lease must outlast the longest path of a delivery
 * that is confirmed in time, or the pop that sees the lease deadline takes the entry back for a retry while its ack
 * is on its way, and it is delivered again.
 * <pre>
 *   lease  &gt;  lead + publish-timeout + 2 x round + 50ms confirm sweep + 100ms settle margin
 * </pre>
 * The lease starts at the pop. An entry popped ahead is published up to the lead later; its confirm may take the
 * publish timeout, which fires up to one confirm sweep late ({@code ConfirmDeadlines.SWEEP_MS}); its ack then waits
 * up to two rounds (the lead, or else the linger) for a pop to carry it; the settle margin covers the hop from the
 * confirm to that call.
 */
final class LeaseRule {

    /** A publish timeout fires up to this late: {@code engine.amqp.ConfirmDeadlines.SWEEP_MS}. */
    static final Duration CONFIRM_SWEEP = Duration.ofMillis(50);
    /** The hop from a confirm to the call that acks it (the settle thread, a busy Redis), with room to spare. */
    static final Duration SETTLE_MARGIN = Duration.ofMillis(100);

    private LeaseRule() {}

    /** The shortest lease is just above this. */
    static Duration bound(Duration lead, Duration linger, Duration publishTimeout) {
        return lead.plus(publishTimeout)
                .plus(round(lead, linger).multipliedBy(2))
                .plus(CONFIRM_SWEEP)
                .plus(SETTLE_MARGIN);
    }

    /**
     * The problem with business {@code name}'s lease, if it is not longer than {@link #bound}; none when a value it
     * needs is missing or out of range (that is reported on its own).
     */
    static Optional<ConfigProblem> check(
            String name, Duration lease, Duration lead, Duration linger, Duration publishTimeout) {
        if (lease == null || lead == null || linger == null || publishTimeout == null) {
            return Optional.empty();
        }
        boolean inRange = !lead.isNegative()
                && lead.compareTo(BusinessSettings.MAX_LEAD) <= 0
                && !linger.isNegative()
                && linger.compareTo(BusinessSettings.MAX_LINGER) <= 0;
        if (!inRange || !positive(publishTimeout) || !positive(lease)) {
            return Optional.empty();
        }
        Duration bound = bound(lead, linger, publishTimeout);
        if (lease.compareTo(bound) > 0) {
            return Optional.empty();
        }
        String round = round(lead, linger) + (positive(lead) ? ", the lead" : ", the linger");
        return Optional.of(ConfigProblem.property(
                name,
                "lease",
                lease,
                "must be longer than lead (" + lead + ") + publish-timeout (" + publishTimeout + ") + 2 x round ("
                        + round + ") + " + CONFIRM_SWEEP.plus(SETTLE_MARGIN).toMillis() + "ms (the "
                        + CONFIRM_SWEEP.toMillis() + "ms confirm sweep and a " + SETTLE_MARGIN.toMillis()
                        + "ms settle margin) = " + bound + ", or an entry confirmed within its publish-timeout can"
                        + " have its lease taken back before its ack and be delivered again"));
    }

    private static boolean positive(Duration d) {
        return d.compareTo(Duration.ZERO) > 0;
    }

    private static Duration round(Duration lead, Duration linger) {
        return positive(lead) ? lead : linger;
    }
}
