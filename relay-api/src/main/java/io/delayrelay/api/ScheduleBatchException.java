package io.delayrelay.api;

import java.util.Collections;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

import org.springframework.core.NestedExceptionUtils;

/**
 * Some schedules of a batch ({@link DelayedMessageProducer#scheduleAll}) failed; every other one of the batch is
 * scheduled. {@link #dueTimes()} holds each request's due time in the batch's order, -1 where it failed;
 * {@link #failures()} each failed request's position and what it failed with. A schedule Redis refused (an error
 * reply) changed nothing, each being one atomic script call; one that timed out may or may not have run. Sending the
 * failed ones again is safe either way, and so is sending the whole batch again: scheduling a scheduled member again
 * replaces it.
 */
public class ScheduleBatchException extends RuntimeException {

    private final transient long[] dueTimes;
    private final transient SortedMap<Integer, RuntimeException> failures;

    public ScheduleBatchException(String business, long[] dueTimes, Map<Integer, RuntimeException> failures) {
        super(message(business, dueTimes.length, failures), failures.isEmpty() ? null : first(failures));
        this.dueTimes = dueTimes.clone();
        this.failures = Collections.unmodifiableSortedMap(new TreeMap<>(failures));
    }

    /**
     * Each request's due time in epoch ms, in the batch's order; -1 for a request whose schedule failed. A request
     * that was scheduled but whose copy under an earlier shard count could not be removed (a reshard's history) is
     * among the {@link #failures()} with its due time here: it may be delivered twice.
     */
    public long[] dueTimes() {
        return dueTimes.clone();
    }

    /** The failed requests' positions in the batch (from 0), in order, and what each failed with. */
    public SortedMap<Integer, RuntimeException> failures() {
        return failures;
    }

    private static RuntimeException first(Map<Integer, RuntimeException> failures) {
        return new TreeMap<>(failures).firstEntry().getValue();
    }

    private static String message(String business, int size, Map<Integer, RuntimeException> failures) {
        TreeMap<Integer, RuntimeException> sorted = new TreeMap<>(failures);
        StringBuilder text = new StringBuilder()
                .append(failures.size())
                .append(" of ")
                .append(size)
                .append(" schedules of business '")
                .append(business)
                .append("' failed, the other ")
                .append(size - failures.size())
                .append(" are scheduled; failed: ");
        int shown = 0;
        for (Map.Entry<Integer, RuntimeException> failure : sorted.entrySet()) {
            if (shown == 5) {
                text.append(", ... (").append(failures.size() - shown).append(" more)");
                break;
            }
            if (shown > 0) {
                text.append(", ");
            }
            text.append('#')
                    .append(failure.getKey())
                    .append(": ")
                    .append(NestedExceptionUtils.getMostSpecificCause(failure.getValue())
                            .getMessage());
            shown++;
        }
        return text.toString();
    }
}
