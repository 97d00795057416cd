package io.delayrelay.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The targets of several consecutive runs side by side ({@code scripts/bench.sh --runs N}): one row per figure, one
 * column per run with what it measured and whether it met the target, and whether every run met it. The issues ask
 * for each of three consecutive runs, not the best one; this is that table.
 */
final class RunsTable {

    private RunsTable() {}

    /** Renders the table of {@code reports} (each rendered already) and writes it beside their reports. */
    static Path write(BenchConfig config, List<Report> reports) throws IOException {
        String part = config.only().isEmpty() ? "" : "-only-" + String.join("-", config.only());
        Path file = config.resultsDir().resolve(LocalDate.now() + (config.full() ? "-full" : "") + part + "-runs.md");
        Files.createDirectories(config.resultsDir());
        Files.writeString(file, render(reports));
        return file;
    }

    static String render(List<Report> reports) {
        // figure -> target, and figure -> one cell per run (in the order the figures first appeared)
        Map<String, String> targetOf = new LinkedHashMap<>();
        Map<String, String[]> cells = new LinkedHashMap<>();
        Map<String, Integer> met = new LinkedHashMap<>();
        for (int r = 0; r < reports.size(); r++) {
            for (String[] t : reports.get(r).targets()) {
                targetOf.putIfAbsent(t[0], t[2]);
                String[] row = cells.computeIfAbsent(t[0], k -> new String[reports.size()]);
                boolean ok = "met".equals(t[3]);
                row[r] = t[1] + (ok ? " (met)" : " (**missed**)");
                met.merge(t[0], ok ? 1 : 0, Integer::sum);
            }
        }
        StringBuilder b = new StringBuilder();
        b.append("# delay-relay benchmark: ")
                .append(reports.size())
                .append(" consecutive runs, ")
                .append(LocalDate.now())
                .append(
                        "\n\nEach run's own report has its tables and method; load average (1 min) at each run's start ")
                .append("and end: ");
        List<String> loads = new ArrayList<>();
        for (Report report : reports) {
            loads.add("run " + report.run() + " " + report.loads());
        }
        b.append(String.join(", ", loads)).append(".\n\n");
        String relayEnvironment = Report.relayEnvironment();
        if (!relayEnvironment.isEmpty()) {
            b.append("Relay settings from the environment: ")
                    .append(relayEnvironment)
                    .append(".\n\n");
        }
        b.append("| figure | target |");
        for (Report report : reports) {
            b.append(" run ").append(report.run()).append(" |");
        }
        b.append(" met in every run |\n|---|---:|");
        b.append("---:|".repeat(reports.size())).append("---|\n");
        for (Map.Entry<String, String[]> e : cells.entrySet()) {
            b.append("| ")
                    .append(e.getKey())
                    .append(" | ")
                    .append(targetOf.get(e.getKey()))
                    .append(" |");
            for (String cell : e.getValue()) {
                b.append(' ').append(cell == null ? "not measured" : cell).append(" |");
            }
            int times = met.get(e.getKey());
            b.append(times == reports.size() ? " yes" : " **no** (" + times + " of " + reports.size() + ")")
                    .append(" |\n");
        }
        return b.toString();
    }
}
