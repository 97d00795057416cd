package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * What one listing or search may cost, whatever the request asks: entries read from Redis, bytes of them held in
 * the heap, and time. The management port is reachable by monitoring; before these bounds one request could hold
 * {@code limit x shards} members in the heap (160,000 with 16 shards) or ZSCAN a 10-million-entry backlog for a
 * prefix that matches nothing. A listing that hits a bound answers what it found with {@code partial: true}.
 */
final class ListingBudget {

    /** Entries one request reads from Redis at most (scanned by a search, fetched by a listing). */
    static final int MAX_READ = 20_000;

    /** Bytes of members, reasons and previews one request holds at most (beyond them: partial). */
    static final long MAX_BYTES = 8L * 1024 * 1024;

    /** Time one request spends reading at most. */
    static final Duration MAX_TIME = Duration.ofSeconds(2);

    private final LongSupplier nanos;
    private final long deadline;
    private final int maxRead;
    private final long maxBytes;
    private int read;
    private long bytes;
    private boolean exhausted;

    ListingBudget() {
        this(System::nanoTime, MAX_READ, MAX_BYTES, MAX_TIME);
    }

    ListingBudget(LongSupplier nanos, int maxRead, long maxBytes, Duration maxTime) {
        this.nanos = nanos;
        this.deadline = nanos.getAsLong() + maxTime.toNanos();
        this.maxRead = maxRead;
        this.maxBytes = maxBytes;
    }

    /** Counts entries read (scanned or fetched); false once a bound is reached. */
    boolean read(int entries) {
        read += entries;
        return check();
    }

    /** Counts text held; false once a bound is reached. */
    boolean hold(String text) {
        if (text != null) {
            bytes += text.length() <= 1024 ? text.length() : text.getBytes(StandardCharsets.UTF_8).length;
        }
        return check();
    }

    /** Whether more may be read. */
    boolean left() {
        return check();
    }

    /** Whether a bound was reached: the answer is partial. */
    boolean exhausted() {
        return exhausted;
    }

    /** Entries still allowed to be read (at least 1 while not exhausted). */
    int readLeft() {
        return Math.max(1, maxRead - read);
    }

    private boolean check() {
        if (!exhausted && (read >= maxRead || bytes >= maxBytes || nanos.getAsLong() - deadline > 0)) {
            exhausted = true;
        }
        return !exhausted;
    }
}
