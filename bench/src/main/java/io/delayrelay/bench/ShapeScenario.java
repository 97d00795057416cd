package io.delayrelay.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.delayrelay.api.RelayHeaders;

/**
 * The {@code shape} scenario: what each part of a message's shape costs the broker. RabbitMQ PerfTest publishes the
 * same N persistent, confirmed messages with one part at a time (message id, content type, priority, each
 * {@code x-delay-*} header, {@code mandatory}), with the relay's full shape and with the lean shape; the relay
 * drains the same N with {@code message-shape: full} and {@code lean}. Every round runs them all, one after the
 * other; the rounds repeat it (the machine is shared: the load average of each round is shown next to it).
 */
final class ShapeScenario {

    static final String PLAIN = "plain (100 B, persistent)";
    static final String PERF_FULL = "relay's full shape (id, content type, priority, 5 headers, mandatory)";
    static final String PERF_LEAN = "lean shape (message id, mandatory)";
    static final String RELAY_FULL = "relay, message-shape: full (defaults)";
    static final String RELAY_LEAN = "relay, message-shape: lean";

    /** A PerfTest run: its {@code --message-properties} entries and whether it publishes with mandatory. */
    record Variant(String name, List<String> properties, boolean mandatory) {}

    /** One round: every variant's drain, by name, and the 1-minute load average before and after. */
    record Round(Map<String, Scenarios.Drain> drains, double loadBefore, double loadAfter) {}

    private ShapeScenario() {}

    static List<Variant> variants(long due) {
        String id = "messageId=3f2c9a4e-1b7d-4c0e-9a51-6d8e2f1b7c30";
        List<Variant> v = new ArrayList<>();
        v.add(new Variant(PLAIN, List.of(), false));
        v.add(new Variant("+ message id", List.of(id), false));
        v.add(new Variant("+ content type", List.of("contentType=application/octet-stream"), false));
        v.add(new Variant("+ priority 0", List.of("priority=0"), false));
        v.add(new Variant("+ " + RelayHeaders.BUSINESS, List.of(RelayHeaders.BUSINESS + "=perftest"), false));
        v.add(new Variant("+ " + RelayHeaders.DUE_AT, List.of(RelayHeaders.DUE_AT + "=" + due), false));
        v.add(new Variant("+ " + RelayHeaders.RELAYED_AT, List.of(RelayHeaders.RELAYED_AT + "=" + due), false));
        v.add(new Variant("+ " + RelayHeaders.SHARD, List.of(RelayHeaders.SHARD + "=0"), false));
        v.add(new Variant("+ " + RelayHeaders.ATTEMPT, List.of(RelayHeaders.ATTEMPT + "=1"), false));
        v.add(new Variant("+ mandatory", List.of(), true));
        v.add(new Variant(PERF_FULL, Scenarios.relayShapeProperties(due), true));
        v.add(new Variant(PERF_LEAN, List.of(id), true));
        return v;
    }

    static List<Round> run(Infra infra, Scenarios s, Path perfTestClasspath, int rounds) throws Exception {
        String x = s.exchange();
        long cap = infra.config.drainCapMs();
        for (int w = 1; w <= 3; w++) {
            Scenarios.log("shape: warm-up drain %d (not reported)", w);
            s.drain(new RelayContender(infra, "relay", x, Map.of()), "warm-up", 0, cap);
            if (s.lastDrainJitMs() < 300) {
                break;
            }
        }
        List<Round> result = new ArrayList<>();
        for (int r = 1; r <= rounds; r++) {
            double before = loadAverage();
            Scenarios.log("shape: round %d of %d, load average %.2f", r, rounds, before);
            Map<String, Scenarios.Drain> drains = new LinkedHashMap<>();
            for (Variant v : variants(System.currentTimeMillis())) {
                List<String> extra = new ArrayList<>();
                if (v.mandatory()) {
                    extra.addAll(List.of("--flag", "mandatory"));
                }
                extra.addAll(Scenarios.messageProperties(v.properties()));
                drains.put(
                        v.name(),
                        s.perfTest(perfTestClasspath, 2, 1_000, "RabbitMQ PerfTest, " + v.name(), v.name(), extra));
            }
            drains.put(
                    RELAY_FULL,
                    s.drain(new RelayContender(infra, "relay", x, Map.of()), "defaults, full shape", 0, cap));
            drains.put(
                    RELAY_LEAN,
                    s.drain(
                            new RelayContender(infra, "relay", x, Map.of("message-shape", "lean")),
                            "defaults, lean shape",
                            0,
                            cap));
            result.add(new Round(drains, before, loadAverage()));
        }
        return result;
    }

    /** The 1-minute load average, NaN where /proc/loadavg cannot be read. */
    static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** The tables: broker CPU per message and msg/s of each variant per round, then the ratios per round. */
    static String render(List<Round> rounds, int n) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(
                Locale.ROOT,
                "## Message shape: the broker's CPU per message of each part (%,d persistent 100 B messages, "
                        + "confirms, 2 producers, no consumer; %d rounds)%n%n",
                n,
                rounds.size()));
        b.append("Load average (1 min) before / after each round: ");
        for (int r = 0; r < rounds.size(); r++) {
            b.append(String.format(
                            Locale.ROOT,
                            "round %d %.2f / %.2f",
                            r + 1,
                            rounds.get(r).loadBefore(),
                            rounds.get(r).loadAfter()))
                    .append(r + 1 < rounds.size() ? "; " : ".\n\n");
        }
        b.append(
                "| PerfTest message / relay | broker µs/msg, each round | median | median − plain | msg/s, each round |\n");
        b.append("|---|---|---:|---:|---|\n");
        for (String name : rounds.get(0).drains().keySet()) {
            double[] cpu = new double[rounds.size()];
            double[] extra = new double[rounds.size()];
            StringBuilder each = new StringBuilder();
            StringBuilder rates = new StringBuilder();
            for (int r = 0; r < rounds.size(); r++) {
                Scenarios.Drain d = rounds.get(r).drains().get(name);
                Scenarios.Drain plain = rounds.get(r).drains().get(PLAIN);
                cpu[r] = brokerMicros(d);
                extra[r] = cpu[r] - brokerMicros(plain);
                each.append(r == 0 ? "" : " / ").append(f1(cpu[r]));
                rates.append(r == 0 ? "" : " / ").append(String.format(Locale.ROOT, "%,.0f", d.rate()));
            }
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | %s | %s |%n",
                    name,
                    each,
                    f1(median(cpu)),
                    name.equals(PLAIN) ? "–" : signed(median(extra)),
                    rates));
        }
        b.append("\nRatios of drain rates, each round (same run):\n\n");
        b.append("| ratio | each round | median |\n|---|---|---:|\n");
        ratioRow(b, rounds, RELAY_FULL, PERF_FULL, "relay (full) / PerfTest with the relay's full shape");
        ratioRow(b, rounds, RELAY_LEAN, PLAIN, "relay (lean) / plain PerfTest");
        ratioRow(b, rounds, RELAY_LEAN, PERF_FULL, "relay (lean) / PerfTest with the relay's full shape");
        ratioRow(b, rounds, RELAY_LEAN, PERF_LEAN, "relay (lean) / PerfTest with the lean shape");
        ratioRow(b, rounds, RELAY_LEAN, RELAY_FULL, "relay (lean) / relay (full)");
        b.append(
                """

                Broker CPU = user+system CPU of beam.smp (BENCH_BROKER_PID when set, else every local beam.smp) from the
                first message in the queue until it holds N, scaled to N; for the relay, from the due instant until the
                queue holds N. Header values are strings in PerfTest, numbers in the relay's messages. The relay's
                lean shape: message id, persistent, mandatory; x-delay-attempt only on a redelivery, x-delay-id only
                for entries scheduled by id, and the producer's headers.

                """);
        return b.toString();
    }

    /** Median over the rounds of {@code a}'s rate / {@code b}'s rate. */
    static double medianRatio(List<Round> rounds, String a, String b) {
        double[] r = new double[rounds.size()];
        for (int i = 0; i < r.length; i++) {
            r[i] = ratio(rounds.get(i), a, b);
        }
        return median(r);
    }

    /** Every round's ratio, e.g. "0.91x / 0.95x / 0.97x". */
    static String eachRatio(List<Round> rounds, String a, String b) {
        StringBuilder each = new StringBuilder();
        for (int i = 0; i < rounds.size(); i++) {
            each.append(i == 0 ? "" : " / ").append(String.format(Locale.ROOT, "%.2fx", ratio(rounds.get(i), a, b)));
        }
        return each.toString();
    }

    private static void ratioRow(StringBuilder b, List<Round> rounds, String a, String over, String label) {
        b.append(String.format(
                Locale.ROOT, "| %s | %s | %.2fx |%n", label, eachRatio(rounds, a, over), medianRatio(rounds, a, over)));
    }

    private static double ratio(Round round, String a, String b) {
        Scenarios.Drain x = round.drains().get(a);
        Scenarios.Drain y = round.drains().get(b);
        return x == null || y == null || y.rate() == 0 ? Double.NaN : x.rate() / y.rate();
    }

    private static double brokerMicros(Scenarios.Drain d) {
        return d == null ? Double.NaN : d.microsPerMessage(d.brokerCpuNanos());
    }

    static double median(double[] values) {
        double[] sorted =
                Arrays.stream(values).filter(v -> !Double.isNaN(v)).sorted().toArray();
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int m = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
    }

    private static String f1(double v) {
        return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String signed(double v) {
        return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%+.1f", v);
    }
}
