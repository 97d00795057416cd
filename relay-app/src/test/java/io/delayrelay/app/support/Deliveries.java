package io.delayrelay.app.support;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.RelayTestKit.Received;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The one delivery check of every test that delivers: nothing lost, no duplicate beyond a bound the test states and
 * names, nothing early, nothing that was never sent. Why one class: each test used to check its own subset of
 * these (never-early was missing from the multi-instance, reshard, cluster and every fault test), and a check that
 * stops listening at the last expected message cannot see a late redelivery, so this one always listens a quiet
 * period more.
 *
 * <p>Early is measured two ways. On Redis time: {@link RelayHeaders#DUE_AT} is the entry's score and
 * {@link RelayHeaders#RELAYED_AT} the relay's Redis time when it built the message, so {@code relayed-at >= due-at}
 * must hold whatever the test JVM's clock does; when the test knows the due time it scheduled (a retry moves the
 * due-at header later), the relayed-at must not precede that either. The relay stamps the relayed-at no earlier than
 * the pop's own Redis TIME (its running estimate of Redis time alone trailed Redis by up to 54 ms on a loaded 2-core
 * box), so the header check has no tolerance. The arrival is checked too: a delivery cannot arrive before it was
 * popped, so when Redis runs on this host (one clock, as in every test here: loopback servers) an arrival before due
 * on the test's clock is early. Lag (arrival
 * minus due) is a figure only.
 */
public final class Deliveries {

    /** How long to keep listening after the last expected message, for late redeliveries. */
    public static final Duration DEFAULT_QUIET = Duration.ofMillis(500);

    /**
     * How far the relayed-at header may precede the due time: none. (Before the relay stamped it with at least the
     * pop's Redis TIME, its estimate trailed by up to 54 ms at load 20 on 2 cores: 4 ms in the confirm-timeout
     * scenario, 54 ms in the broker outage.)
     */
    public static final long RELAYED_AT_TOLERANCE_MS = 0;

    private static final int SAMPLE = 5;

    private final Set<String> expected;
    private Set<String> optional = Set.of();
    private Map<String, Long> scheduledDue = Map.of();
    private int maxDuplicates;
    private String duplicateBound = "exactly once";
    private Duration quiet = DEFAULT_QUIET;
    private boolean redisOnThisHost = true;

    private Deliveries(Collection<String> expected) {
        this.expected = new LinkedHashSet<>(expected);
        if (this.expected.size() != expected.size()) {
            throw new IllegalArgumentException(
                    "expected bodies must be distinct: " + (expected.size() - this.expected.size()) + " repeated");
        }
    }

    /** Every one of these bodies must arrive, once unless {@link #duplicatesAtMost} says otherwise. */
    public static Deliveries expect(Collection<String> bodies) {
        return new Deliveries(bodies);
    }

    public static Deliveries expect(String... bodies) {
        return new Deliveries(List.of(bodies));
    }

    /**
     * Bodies that may arrive but need not (e.g. a payload version a later re-schedule replaced): not lost when
     * absent, not unexpected when present; duplicates and earliness count as for any other.
     */
    public Deliveries mayAlsoArrive(Collection<String> bodies) {
        this.optional = new HashSet<>(bodies);
        return this;
    }

    /** The due time the producer scheduled, body to epoch ms: no delivery may be relayed before it. */
    public Deliveries scheduledDue(Map<String, Long> dueByBody) {
        this.scheduledDue = Map.copyOf(dueByBody);
        return this;
    }

    /**
     * Allows at most {@code bound} extra deliveries (copies beyond the first), for a reason named in the assertion
     * message, e.g. "in-flight window 1,600 x 1 kill -9".
     */
    public Deliveries duplicatesAtMost(int bound, String why) {
        if (bound < 0) {
            throw new IllegalArgumentException("duplicate bound must be >= 0, was " + bound);
        }
        this.maxDuplicates = bound;
        this.duplicateBound = why + " = " + bound;
        return this;
    }

    /** For a Redis on another host (another clock): only the relayed-at header tells early deliveries. */
    public Deliveries redisOnAnotherHost() {
        this.redisOnThisHost = false;
        return this;
    }

    public Deliveries quiet(Duration quiet) {
        this.quiet = quiet;
        return this;
    }

    /**
     * Waits up to {@code timeout} for every expected body, listens the quiet period more, then asserts: lost 0,
     * early 0, unexpected 0, duplicates within the bound.
     */
    public Report check(BlockingQueue<Received> queue, Duration timeout) throws InterruptedException {
        return check(new Inbox(queue), timeout);
    }

    public Report check(Inbox inbox, Duration timeout) throws InterruptedException {
        Report report = await(inbox, timeout);
        report.assertClean();
        return report;
    }

    /** Like {@link #check(Inbox, Duration)} but does not assert: for figures printed before the assertions. */
    public Report await(Inbox inbox, Duration timeout) throws InterruptedException {
        inbox.awaitAll(expected, timeout);
        inbox.listen(quiet);
        return measure(inbox.drain());
    }

    /** The figures of what was received (no waiting, no assertion). */
    public Report measure(List<Received> received) {
        Map<String, Integer> copies = new HashMap<>();
        List<String> early = new ArrayList<>();
        List<String> unexpected = new ArrayList<>();
        int earlyCount = 0;
        int unexpectedCount = 0;
        long maxLag = Long.MIN_VALUE;
        long maxLead = 0;
        for (Received r : received) {
            maxLead = Math.max(maxLead, lead(r));
            String body = r.text();
            boolean first = copies.merge(body, 1, Integer::sum) == 1;
            if (!expected.contains(body) && !optional.contains(body)) {
                unexpectedCount++;
                if (unexpected.size() < SAMPLE) {
                    unexpected.add(body);
                }
            }
            String why = earliness(r);
            if (why != null) {
                earlyCount++;
                if (early.size() < SAMPLE) {
                    early.add(body + " " + why);
                }
            }
            Long due = scheduledDue.get(body);
            if (due == null && r.headers().get(RelayHeaders.DUE_AT) instanceof Number n) {
                due = n.longValue();
            }
            if (first && due != null) {
                maxLag = Math.max(maxLag, r.receivedAtMs() - due);
            }
        }
        List<String> lost = new ArrayList<>();
        int lostCount = 0;
        for (String body : expected) {
            if (!copies.containsKey(body)) {
                lostCount++;
                if (lost.size() < SAMPLE) {
                    lost.add(body);
                }
            }
        }
        int duplicates = received.size() - copies.size();
        return new Report(
                expected.size(),
                expected.size() - lostCount,
                lostCount,
                duplicates,
                earlyCount,
                unexpectedCount,
                maxLag == Long.MIN_VALUE ? 0 : maxLag,
                maxLead,
                maxDuplicates,
                duplicateBound,
                lost,
                early,
                unexpected,
                List.copyOf(received));
    }

    /** Null when on time; otherwise what makes this delivery early (or unverifiable). */
    private String earliness(Received r) {
        if (!(r.headers().get(RelayHeaders.RELAYED_AT) instanceof Number relayedAt)) {
            return "has no " + RelayHeaders.RELAYED_AT + " header";
        }
        if (!(r.headers().get(RelayHeaders.DUE_AT) instanceof Number dueAt)) {
            return "has no " + RelayHeaders.DUE_AT + " header";
        }
        long due = Math.max(dueAt.longValue(), scheduledDue.getOrDefault(r.text(), Long.MIN_VALUE));
        if (relayedAt.longValue() + RELAYED_AT_TOLERANCE_MS < due) {
            return "relayed-at " + relayedAt + " < due " + due;
        }
        if (redisOnThisHost && r.receivedAtMs() < due) {
            return "arrived at " + r.receivedAtMs() + " < due " + due + " (one host clock)";
        }
        return null;
    }

    /** How far before due (either due) the relayed-at is, 0 when not before. */
    private long lead(Received r) {
        if (!(r.headers().get(RelayHeaders.RELAYED_AT) instanceof Number relayedAt)
                || !(r.headers().get(RelayHeaders.DUE_AT) instanceof Number dueAt)) {
            return 0;
        }
        long due = Math.max(dueAt.longValue(), scheduledDue.getOrDefault(r.text(), Long.MIN_VALUE));
        return Math.max(0, due - relayedAt.longValue());
    }

    /** What a check saw. {@code delivered} counts distinct expected bodies; {@code all} every delivery in order. */
    public record Report(
            int sent,
            int delivered,
            int lost,
            int duplicates,
            int early,
            int unexpected,
            long maxLagMs,
            long maxLeadMs,
            int maxDuplicates,
            String duplicateBound,
            List<String> lostSample,
            List<String> earlySample,
            List<String> unexpectedSample,
            List<Received> all) {

        /** Asserts lost 0, early 0, unexpected 0 and duplicates within the stated bound. */
        public void assertClean() {
            assertThat(lost)
                    .as("lost: %d of %d expected bodies never arrived (first: %s)", lost, sent, lostSample)
                    .isZero();
            assertThat(early)
                    .as(
                            "early: %d deliveries arrived before due or relayed more than %d ms before it (first: %s)",
                            early, RELAYED_AT_TOLERANCE_MS, earlySample)
                    .isZero();
            assertThat(unexpected)
                    .as("unexpected: %d deliveries of bodies never sent (first: %s)", unexpected, unexpectedSample)
                    .isZero();
            assertThat(duplicates)
                    .as("duplicates (deliveries beyond the first of a body); bound: %s", duplicateBound)
                    .isLessThanOrEqualTo(maxDuplicates);
        }

        @Override
        public String toString() {
            return String.format(
                    "sent=%d delivered=%d duplicates=%d lost=%d early=%d unexpected=%d maxLagMs=%d maxLeadMs=%d",
                    sent, delivered, duplicates, lost, early, unexpected, maxLagMs, maxLeadMs);
        }
    }

    /**
     * Everything a consumer queue received so far, kept in arrival order, with the distinct bodies seen: lets a test
     * watch progress (e.g. kill a relay after a quarter) and then check the whole run.
     */
    public static final class Inbox {
        private final BlockingQueue<Received> queue;
        private final List<Received> all = new ArrayList<>();
        private final Set<String> seen = new HashSet<>();

        public Inbox(BlockingQueue<Received> queue) {
            this.queue = queue;
        }

        /** Every delivery so far, in arrival order (a copy). */
        public synchronized List<Received> drain() {
            int before = all.size();
            queue.drainTo(all);
            for (int i = before; i < all.size(); i++) {
                seen.add(all.get(i).text());
            }
            return List.copyOf(all);
        }

        /** Distinct bodies received so far. */
        public synchronized int distinct() {
            int before = all.size();
            queue.drainTo(all);
            for (int i = before; i < all.size(); i++) {
                seen.add(all.get(i).text());
            }
            return seen.size();
        }

        /** Waits until every expected body arrived at least once or the timeout passed; true when all arrived. */
        public boolean awaitAll(Collection<String> expected, Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            Set<String> missing = new HashSet<>(expected);
            while (true) {
                synchronized (this) {
                    distinct();
                    missing.removeAll(seen);
                }
                if (missing.isEmpty()) {
                    return true;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                Received next = queue.poll(Math.min(left, TimeUnit.MILLISECONDS.toNanos(200)), TimeUnit.NANOSECONDS);
                if (next != null) {
                    synchronized (this) {
                        all.add(next);
                        seen.add(next.text());
                    }
                }
            }
        }

        /** Keeps listening for {@code quiet}: what arrives meanwhile (late redeliveries) is kept. */
        public void listen(Duration quiet) throws InterruptedException {
            long until = System.nanoTime() + quiet.toNanos();
            long left;
            while ((left = until - System.nanoTime()) > 0) {
                Received next = queue.poll(left, TimeUnit.NANOSECONDS);
                if (next != null) {
                    synchronized (this) {
                        all.add(next);
                        seen.add(next.text());
                    }
                }
            }
        }
    }
}
