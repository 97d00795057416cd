package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

import io.delayrelay.app.trigger.BusinessSpec;
import org.slf4j.LoggerFactory;
import org.springframework.util.unit.DataSize;

/**
 * Compares what the workers may hold in flight with the heap. Each worker holds up to
 * {@link InFlightBudget#BATCHES_OF_DATA} × batch-bytes of members and payloads, so a few businesses with large
 * batch-bytes can fill a container-sized heap under load and end in an OutOfMemoryError exit. Past half of the
 * maximum heap (the rest is the broker client's buffers, Redis replies being decoded, the application) the relay
 * says so at start, naming the businesses that hold the most: the operator lowers batch-bytes or threads, or gives
 * the JVM more memory, before the first large backlog.
 */
public final class HeapBudget {

    private HeapBudget() {}

    /** Most bytes the workers of one business may hold in flight on this instance. */
    public static long inFlightBytes(BusinessSpec spec) {
        return spec.threads() * InFlightBudget.BATCHES_OF_DATA * spec.batch().bytes();
    }

    /** Logs {@link #warning} for the JVM's max heap, if any. */
    static void warnIfTooSmall(Collection<BusinessSpec> specs) {
        String warning = warning(specs, Runtime.getRuntime().maxMemory());
        if (warning != null) {
            LoggerFactory.getLogger(HeapBudget.class).warn(warning);
        }
    }

    /** The warning to log, or null when the in-flight data of every business fits in half of {@code maxHeap}. */
    public static String warning(Collection<BusinessSpec> specs, long maxHeap) {
        long total = 0;
        for (BusinessSpec spec : specs) {
            total += inFlightBytes(spec);
        }
        if (maxHeap == Long.MAX_VALUE || total <= maxHeap / 2) {
            return null;
        }
        List<BusinessSpec> largest = new ArrayList<>(specs);
        largest.sort(Comparator.comparingLong(HeapBudget::inFlightBytes).reversed());
        List<String> named = new ArrayList<>();
        for (BusinessSpec spec : largest) {
            named.add(spec.name() + " " + spec.threads() + " threads x " + InFlightBudget.BATCHES_OF_DATA + " x "
                    + mb(spec.batch().bytes()) + " = " + mb(inFlightBytes(spec)));
        }
        return "the workers may hold " + mb(total) + " of messages in flight, more than half of the maximum heap ("
                + mb(maxHeap) + "): " + String.join(", ", named) + ". Large payloads under load can exhaust the heap;"
                + " lower relay.businesses.<name>.batch-bytes or threads, or give the JVM more memory";
    }

    private static String mb(long bytes) {
        return DataSize.ofBytes(bytes).toMegabytes() + " MB";
    }
}
