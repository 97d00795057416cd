package io.delayrelay.app.support;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Thread factories for the relay's own threads: daemon threads (a stuck chore never keeps the JVM alive after the
 * context closed) with names an operator recognises in a thread dump.
 */
public final class DaemonThreads {

    private DaemonThreads() {}

    /** Every thread gets exactly {@code name} (for single-thread executors). */
    public static ThreadFactory named(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /** Threads named {@code prefix0}, {@code prefix1}, ... */
    public static ThreadFactory numbered(String prefix) {
        AtomicInteger next = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + next.getAndIncrement());
            t.setDaemon(true);
            return t;
        };
    }
}
