package io.delayrelay.app.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import io.delayrelay.app.support.Deliveries;

/**
 * What a fault scenario sent and what consumers got: delivered (distinct), duplicates, lost, early, max lag. Printed
 * and appended to target/faults/figures.txt (scripts/faults.sh prints that file at the end). The figures come from
 * the scenario's {@link Deliveries.Report}, the same check that asserts them.
 */
final class FaultFigures {

    record Figures(
            String scenario,
            int sent,
            int delivered,
            int duplicates,
            int lost,
            int early,
            long maxLagMs,
            String extra) {
        @Override
        public String toString() {
            return String.format(
                    "%-34s sent=%d delivered=%d duplicates=%d lost=%d early=%d maxLagMs=%d %s",
                    scenario, sent, delivered, duplicates, lost, early, maxLagMs, extra);
        }
    }

    private FaultFigures() {}

    /** Reports a scenario's delivery check: prints it and appends it to target/faults/figures.txt. */
    static Figures of(String scenario, Deliveries.Report report, String extra) {
        Figures figures = new Figures(
                scenario,
                report.sent(),
                report.delivered(),
                report.duplicates(),
                report.lost(),
                report.early(),
                report.maxLagMs(),
                (extra + " unexpected=" + report.unexpected() + " maxLeadMs=" + report.maxLeadMs() + " duplicateBound="
                                + report.duplicateBound().replace(' ', '_'))
                        .trim());
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
