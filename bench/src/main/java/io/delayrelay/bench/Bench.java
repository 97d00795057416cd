package io.delayrelay.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import io.delayrelay.app.trigger.BusinessSpec;

/**
 * Entry point of scripts/bench.sh: runs the scenarios, prints the table and writes it to bench/results/.
 *
 * <pre>
 * Bench [--full] [--messages N] [--lag-seconds N] [--redis host:port] [--private-redis] [--rabbit host:port] [--out DIR] [--only s1,s2,...]
 *       [--runs N]   (N consecutive runs, each its own report, then their targets side by side: {@link RunsTable})
 * scenarios: drain, memory (from drain loads), lag, backlog, idle, shape, storm [--storm-entries N],
 * cold [--cold-entries N], intake, schedules
 * </pre>
 */
public final class Bench {

    private Bench() {}

    public static void main(String[] args) throws Exception {
        boolean full = false;
        boolean privateRedis = false;
        int messages = 0;
        String redis = "127.0.0.1:6379";
        String rabbit = "127.0.0.1:5672";
        Path out = Path.of("results");
        List<String> only = List.of();
        Path perfTestClasspath = null;
        Path relayJar = null;
        Path logs = null;
        int stormEntries = Storm.DEFAULT_ENTRIES;
        int runs = 1;
        int coldEntries = ColdTierBench.DEFAULT_ENTRIES;
        int lagSeconds = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--full" -> full = true;
                case "--private-redis" -> privateRedis = true;
                case "--redis" -> redis = args[++i];
                case "--rabbit" -> rabbit = args[++i];
                case "--messages" -> messages = Integer.parseInt(args[++i]);
                case "--out" -> out = Path.of(args[++i]);
                case "--only" -> only = Arrays.asList(args[++i].split(","));
                case "--perf-test-classpath" -> perfTestClasspath = Path.of(args[++i]);
                case "--relay-jar" -> relayJar = Path.of(args[++i]);
                case "--logs" -> logs = Path.of(args[++i]);
                case "--storm-entries" -> stormEntries = Integer.parseInt(args[++i]);
                case "--runs" -> runs = Integer.parseInt(args[++i]);
                case "--cold-entries" -> coldEntries = Integer.parseInt(args[++i]);
                case "--lag-seconds" -> lagSeconds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument: " + args[i]);
            }
        }
        if (runs < 1 || runs > 10) {
            throw new IllegalArgumentException("--runs must be 1..10, was " + runs);
        }
        BenchConfig config = BenchConfig.of(
                full,
                messages,
                host(redis),
                port(redis),
                privateRedis,
                host(rabbit),
                port(rabbit),
                out,
                only,
                lagSeconds);
        Path logDir = logs != null ? logs : out.resolve("logs");
        List<Report> reports = new ArrayList<>();
        boolean failed = false;
        Infra infra;
        try {
            infra = new Infra(config);
        } catch (Exception | Error e) {
            // Whatever broke, a report is still written, with the error in it.
            Report report = new Report(config, 0);
            report.error("setup", e);
            e.printStackTrace();
            System.err.println("[bench] results written to " + report.write());
            System.exit(1);
            return;
        }
        try (infra) {
            for (int r = 1; r <= runs; r++) {
                if (runs > 1) {
                    System.err.printf("[bench] ==== run %d of %d%n", r, runs);
                }
                Report report = new Report(config, runs > 1 ? r : 0);
                reports.add(report);
                runOnce(config, infra, report, perfTestClasspath, relayJar, logDir, stormEntries, coldEntries);
                String text = report.render();
                System.out.println(text);
                Path file = report.write();
                System.err.println("[bench] results written to " + file);
                failed |= report.failed();
            }
        }
        if (runs > 1) {
            Path file = RunsTable.write(config, reports);
            System.out.println(Files.readString(file));
            System.err.println("[bench] the targets of the " + runs + " runs side by side: " + file);
        }
        System.exit(failed ? 1 : 0);
    }

    /** One run of the selected scenarios into {@code report} (its setup failure is reported, not thrown). */
    private static void runOnce(
            BenchConfig config,
            Infra infra,
            Report report,
            Path perfTestClasspath,
            Path relayJar,
            Path logDir,
            int stormEntries,
            int coldEntries) {
        long started = System.currentTimeMillis();
        // the steady-state costs are per run: the lag processes add theirs as they go
        SteadyCost.ALL.clear();
        try {
            report.machine(infra);
            Scenarios s = new Scenarios(infra);
            LagProcesses lagProcesses = new LagProcesses(infra, relayJar, logDir);
            run(config, infra, s, report, perfTestClasspath, lagProcesses);
            if (config.runs("storm")) {
                Storm storm = new Storm(infra, relayJar, logDir, stormEntries);
                Path perfTest = perfTestClasspath;
                part(report, "storm", Storm.estimateSeconds(stormEntries) + 10, () -> {
                    // the broker's ceiling in the same run, for the ratio: before and after the storms (the higher
                    // counts), since the broker's speed moves with whatever else the machine runs
                    List<Scenarios.Drain> ceilings = new ArrayList<>();
                    if (perfTest != null) {
                        ceilings.add(s.perfTest(perfTest, 2, 1_000));
                    }
                    List<Storm.Result> results = storm.run();
                    if (perfTest != null) {
                        ceilings.add(s.perfTest(perfTest, 2, 1_000));
                    }
                    report.storm(results, ceilings);
                });
            }
            // not in the quick default run (it loads a million entries): --only cold, or --full
            if (config.only().contains("cold")
                    || (config.full() && config.only().isEmpty())) {
                ColdTierBench cold = new ColdTierBench(infra, relayJar, logDir, coldEntries);
                part(report, "cold", ColdTierBench.estimateSeconds(coldEntries), () -> {
                    report.coldMoves(cold.moves());
                    // the plain-ZADD members' bytes: a failure of theirs is reported and the lag run still goes
                    try {
                        report.coldPlain(cold.plain());
                    } catch (Exception e) {
                        System.err.printf("[bench] == cold (plain-ZADD members): FAILED: %s%n", e);
                        e.printStackTrace();
                        report.error("cold (plain-ZADD members)", e);
                    }
                    report.coldLag(cold.lag());
                });
            }
            // not in the quick default run: --only intake, or --full
            if (config.only().contains("intake")
                    || (config.full() && config.only().isEmpty())) {
                IntakeBench intake = new IntakeBench(infra, relayJar, logDir, perfTestClasspath);
                part(report, "intake", IntakeBench.estimateSeconds(), () -> report.intake(intake.run()));
            }
            // not in the quick default run (about 7 minutes): --only schedules, or --full
            if (config.only().contains("schedules")
                    || (config.full() && config.only().isEmpty())) {
                ScheduleBench schedules = new ScheduleBench(infra, relayJar, logDir);
                part(report, "schedules", ScheduleBench.estimateSeconds(), () -> report.schedules(schedules.run()));
            }
        } catch (Exception | Error e) {
            // Whatever broke, the report is still written, with the error in it.
            report.error("setup", e);
            e.printStackTrace();
        }
        report.elapsed(System.currentTimeMillis() - started);
    }

    /** A part of the run; a failing part is reported as an error and the run goes on with the next. */
    private interface Part {
        void run() throws Exception;
    }

    private static long runStarted = System.currentTimeMillis();

    private static void part(Report report, String name, double estimateSeconds, Part part) {
        long start = System.currentTimeMillis();
        System.err.printf(
                "[bench] == %s: about %s (estimate), %s since the start%n",
                name, duration(estimateSeconds * 1000), duration(start - runStarted));
        try {
            part.run();
            System.err.printf("[bench] == %s: done in %s%n", name, duration(System.currentTimeMillis() - start));
        } catch (Exception | Error e) {
            System.err.printf(
                    "[bench] == %s: FAILED after %s: %s%n", name, duration(System.currentTimeMillis() - start), e);
            e.printStackTrace();
            report.error(name, e);
        }
    }

    private static String duration(double ms) {
        long s = Math.round(ms / 1000);
        return s >= 60 ? String.format("%d min %02d s", s / 60, s % 60) : s + " s";
    }

    private static void run(
            BenchConfig config,
            Infra infra,
            Scenarios s,
            Report report,
            Path perfTestClasspath,
            LagProcesses lagProcesses) {
        runStarted = System.currentTimeMillis();
        System.err.printf(
                "[bench] %s run: about %s in all (estimate; more on a busy machine)%n",
                config.full() ? "full" : "quick", duration(config.estimateSeconds() * 1000));
        if (config.runs("drain")) {
            part(
                    report,
                    "drain",
                    config.drainEstimateSeconds(),
                    () -> drain(config, infra, s, report, perfTestClasspath));
        }
        if (config.runs("idle")) {
            // With keyspace notifications (the private Redis has them on), then without (polling at max-idle).
            boolean notify = config.privateRedis();
            part(report, "idle", 3 * (config.idleSeconds() + 5), () -> {
                report.idle(s.idle(null, 1, notify));
                report.idle(s.idle(null, 3, notify));
                report.idle(s.idle(null, 1, false));
                report.idle(s.idle(null, 3, false));
            });
        }
        if (config.runs("lag")) {
            String x = s.exchange();
            int seconds = config.lagSeconds();
            double separate = config.separateLagEstimateSeconds();
            double each = config.inProcessLagEstimateSeconds();
            // Relay, producer and consumer in three JVMs: the lag table and the due->published->received split.
            for (int rate : config.lagRates()) {
                part(
                        report,
                        "lag relay " + rate + "/s",
                        separate,
                        () -> report.lag(s.lagSeparate(lagProcesses, "relay", "api", rate, seconds)));
            }
            for (int rate : config.zaddLagRates()) {
                part(
                        report,
                        "lag relay plain ZADD " + rate + "/s",
                        separate,
                        () -> report.lag(
                                s.lagSeparate(lagProcesses, "relay, plain ZADD producer", "zadd", rate, seconds)));
            }
            // The relay-api producer sending batches (scheduleAll, one round trip per thread every few ms): what a
            // producer that pipelines saves Redis, measured in the same run.
            for (int rate : config.batchLagRates()) {
                part(
                        report,
                        "lag relay relay-api batches " + rate + "/s",
                        separate,
                        () -> report.lag(s.lagSeparate(lagProcesses, Report.BATCH_PRODUCER, "batch", rate, seconds)));
            }
            try {
                lagProcesses.close();
            } catch (Exception e) {
                report.error("stopping the lag scenario's relay JVM", e);
            }
            // In-process (relay, producer, consumer in the harness JVM): the relay's popped and confirmed instants
            // come from its events, which a separate JVM does not expose; only for the 4-stage breakdown.
            int breakdownRate = 5_000;
            part(
                    report,
                    "lag relay in-process " + breakdownRate + "/s",
                    each,
                    () -> report.lag(s.lag(
                            new RelayContender(infra, "relay, in-process", x, Map.of()), breakdownRate, seconds)));
            part(
                    report,
                    "lag relay plain ZADD in-process " + breakdownRate + "/s",
                    each,
                    () -> report.lag(s.lag(
                            new RelayContender(infra, "relay, plain ZADD producer, in-process", x, Map.of(), 1, true),
                            breakdownRate,
                            seconds)));
            for (int rate : config.baselineLagRates()) {
                part(
                        report,
                        "lag seed " + rate + "/s",
                        each,
                        () -> report.lag(s.lag(new SeedContender(infra, x, 2), rate, seconds)));
                part(
                        report,
                        "lag Redisson " + rate + "/s",
                        each,
                        () -> report.lag(s.lag(new RedissonContender(infra, x, 2), rate, seconds)));
            }
        }
        if (config.runs("backlog")) {
            part(report, "backlog", config.backlogEstimateSeconds(), () -> backlog(config, infra, s, report));
        }
        if (config.runs("shape") && perfTestClasspath != null) {
            part(
                    report,
                    "shape",
                    config.shapeEstimateSeconds(),
                    () -> report.shape(ShapeScenario.run(infra, s, perfTestClasspath, BenchConfig.SHAPE_ROUNDS)));
        }
    }

    private static void backlog(BenchConfig config, Infra infra, Scenarios s, Report report) throws Exception {
        String x = s.exchange();
        long cap = config.drainCapMs();
        RelayContender relay = new RelayContender(infra, "relay", x, Map.of());
        Scenarios.Drain with = s.drain(
                relay,
                "defaults, backlog " + String.format("%,d", config.backlogEntries()),
                0,
                cap,
                s.backlog(relay::business, config.backlogEntries()));
        Scenarios.Drain without = report.relayDefaultAll();
        if (without == null) {
            without = s.drain(new RelayContender(infra, "relay", x, Map.of()), "defaults", 0, cap);
        }
        report.backlog(with, without);
    }

    private static void drain(BenchConfig config, Infra infra, Scenarios s, Report report, Path perfTestClasspath)
            throws Exception {
        String x = s.exchange();
        long cap = config.drainCapMs();
        long baselineCap = config.baselineCapMs();
        int defaultThreads = 2;
        {
            // Warm-up (not reported): the first drains of a fresh JVM pay for JIT compilation, which would
            // otherwise be charged to whichever contender happens to run first. One drain was not enough on 2 busy
            // cores: the hot path reached C2 only during the next drain (5.5 s of compiling inside the defaults'
            // window, 38-68 µs of JVM CPU per message instead of 18), so warm up until a drain compiles little.
            for (int w = 1; w <= 3; w++) {
                System.err.println("[bench] warm-up drain " + w + " (not reported)");
                s.drain(new RelayContender(infra, "relay", x, Map.of()), "warm-up", 0, cap);
                if (s.lastDrainJitMs() < 300) {
                    break;
                }
            }
            // The label states the relay's defaults (parseSettings reads threads and batch from it).
            String defaults =
                    "defaults: " + BusinessSpec.DEFAULT_THREADS + " threads, batch " + BusinessSpec.DEFAULT_BATCH_SIZE;
            Scenarios.Drain relayAll = s.drain(new RelayContender(infra, "relay", x, Map.of()), defaults, 0, cap);
            report.relayDefault(
                    relayAll, s.drain(new RelayContender(infra, "relay", x, Map.of()), defaults, 1_000, cap));
            Scenarios.Drain best = relayAll;
            for (int[] tb : config.sweep()) {
                Scenarios.Drain d = s.drain(
                        new RelayContender(infra, "relay", x, Map.of("threads", tb[0], "batch-size", tb[1])),
                        tb[0] + " threads, batch " + tb[1],
                        0,
                        cap);
                report.sweep(d);
                if (d.rate() > best.rate()) {
                    best = d;
                }
            }
            if (best != relayAll) {
                int[] tb = parseSettings(best.settings());
                report.relayBest(
                        best,
                        s.drain(
                                new RelayContender(infra, "relay", x, Map.of("threads", tb[0], "batch-size", tb[1])),
                                best.settings(),
                                1_000,
                                cap));
            } else {
                report.relayBest(null, null);
            }
            List<Scenarios.Drain> ceilings = new ArrayList<>();
            for (int batch : config.full() ? new int[] {100, 500, 2_000} : new int[] {200, 1_000}) {
                ceilings.add(s.ceiling(2, batch));
            }
            report.ceiling(
                    ceilings.stream()
                            .max(Comparator.comparingDouble(Scenarios.Drain::rate))
                            .orElseThrow(),
                    ceilings);
            if (perfTestClasspath != null) {
                report.perfTest(s.perfTest(perfTestClasspath, 2, 1_000));
                report.perfTestRelayShaped(s.perfTest(perfTestClasspath, 2, 1_000, true));
            }
            report.instances(s.drain(
                    new RelayContender(infra, "relay x3", x, Map.of(), 3, false), "3 instances, defaults", 0, cap));
            report.seed(
                    s.drain(new SeedContender(infra, x, defaultThreads), defaultThreads + " threads", 0, baselineCap),
                    s.drain(
                            new SeedContender(infra, x, defaultThreads),
                            defaultThreads + " threads",
                            1_000,
                            baselineCap));
            report.redisson(
                    s.drain(
                            new RedissonContender(infra, x, defaultThreads),
                            defaultThreads + " bridge threads",
                            0,
                            baselineCap),
                    s.drain(
                            new RedissonContender(infra, x, defaultThreads),
                            defaultThreads + " bridge threads",
                            1_000,
                            baselineCap));
        }
    }

    private static int[] parseSettings(String settings) {
        String[] parts = settings.split("[^0-9]+");
        List<Integer> numbers = new ArrayList<>();
        for (String p : parts) {
            if (!p.isEmpty()) {
                numbers.add(Integer.parseInt(p));
            }
        }
        return new int[] {numbers.get(0), numbers.get(1)};
    }

    private static String host(String hostPort) {
        return hostPort.substring(0, hostPort.lastIndexOf(':'));
    }

    private static int port(String hostPort) {
        return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
    }
}
