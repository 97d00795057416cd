package io.delayrelay.app.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.RelayTestKit.Received;

/**
 * What a fault scenario sent and what consumers got: delivered (distinct), duplicates, lost, max lag. Printed and
 * appended to target/faults/figures.txt (scripts/faults.sh prints that file at the end).
 */
final class FaultFigures {

    /** Everything received so far from a consumer queue, by body. */
    static final class Collector {
        private final BlockingQueue<Received> queue;
        private final List<Received> all = new ArrayList<>();
        private final Set<String> seen = new HashSet<>();

        Collector(BlockingQueue<Received> queue) {
            this.queue = queue;
        }

        synchronized List<Received> drain() {
            int before = all.size();
            queue.drainTo(all);
            for (int i = before; i < all.size(); i++) {
                seen.add(all.get(i).text());
            }
            return all;
        }

        /** Distinct bodies received so far. */
        synchronized int distinct() {
            drain();
            return seen.size();
        }

        /** Waits until {@code expected} distinct bodies arrived or the timeout passed, then listens {@code quietMs} more. */
        void awaitDistinct(int expected, long timeoutMs, long quietMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (distinct() < expected && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
            }
            Thread.sleep(quietMs);
            drain();
        }
    }

    record Figures(String scenario, int sent, int delivered, int duplicates, int lost, long maxLagMs, String extra) {
        @Override
        public String toString() {
            return String.format(
                    "%-34s sent=%d delivered=%d duplicates=%d lost=%d maxLagMs=%d %s",
                    scenario, sent, delivered, duplicates, lost, maxLagMs, extra);
        }
    }

    private FaultFigures() {}

    /** Figures of the received messages against the sent bodies; lag = first arrival - due-at header. */
    static Figures of(String scenario, Collection<String> sent, List<Received> received, String extra) {
        return of(scenario, sent, Map.of(), received, extra);
    }

    /**
     * Figures with lag measured from the due time the producer scheduled ({@code scheduledDue}, body -> epoch ms)
     * when known: after a failed attempt the due-at header carries the retry time, not the original one.
     */
    static Figures of(
            String scenario,
            Collection<String> sent,
            Map<String, Long> scheduledDue,
            List<Received> received,
            String extra) {
        Map<String, Integer> counts = new HashMap<>();
        long maxLag = 0;
        for (Received r : received) {
            if (counts.merge(r.text(), 1, Integer::sum) > 1) {
                continue;
            }
            Long due = scheduledDue.get(r.text());
            if (due == null && r.headers().get(RelayHeaders.DUE_AT) instanceof Number n) {
                due = n.longValue();
            }
            if (due != null) {
                maxLag = Math.max(maxLag, r.receivedAtMs() - due);
            }
        }
        int lost = 0;
        for (String body : sent) {
            if (!counts.containsKey(body)) {
                lost++;
            }
        }
        int delivered = (int) sent.stream().filter(counts::containsKey).count();
        int duplicates = received.size() - counts.size();
        Figures figures = new Figures(scenario, sent.size(), delivered, duplicates, lost, maxLag, extra);
        report(figures);
        return figures;
    }

    static void report(Figures figures) {
        System.out.println("FAULT FIGURES " + figures);
        try {
            Path dir = Files.createDirectories(Path.of("target", "faults"));
            Files.writeString(
                    dir.resolve("figures.txt"),
                    figures + System.lineSeparator(),
                    StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (IOException e) {
            System.out.println("could not write target/faults/figures.txt: " + e);
        }
    }
}
