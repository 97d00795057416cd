package io.delayrelay.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Collects the figures and renders them as one markdown table set (printed, and written to bench/results/). */
final class Report {

    private final BenchConfig config;
    private String machine = "";
    private long elapsedMs;
    private Scenarios.Drain relayAll;
    private Scenarios.Drain relaySpread;
    private Scenarios.Drain bestAll;
    private Scenarios.Drain bestSpread;
    private final List<Scenarios.Drain> sweep = new ArrayList<>();
    private Scenarios.Drain ceiling;
    private List<Scenarios.Drain> ceilings = List.of();
    private Scenarios.Drain perfTest;
    /** PerfTest publishing messages shaped as the relay's (message id, five headers, mandatory). */
    private Scenarios.Drain perfTestShaped;

    private Scenarios.Drain threeInstances;
    private Scenarios.Drain seedAll;
    private Scenarios.Drain seedSpread;
    private Scenarios.Drain redissonAll;
    private Scenarios.Drain redissonSpread;
    private final List<Scenarios.Idle> idles = new ArrayList<>();
    private final List<Scenarios.Lag> lags = new ArrayList<>();
    private Scenarios.Drain backlogWith;
    private Scenarios.Drain backlogWithout;
    private List<Storm.Result> storm = List.of();
    private List<Scenarios.Drain> stormPerfTests = List.of();
    private ColdTierBench.Moves coldMoves;
    private ColdTierBench.Plain coldPlain;
    private ColdTierBench.Lag coldLag;
    private IntakeBench.Result intake;
    private ScheduleBench.Result schedules;
    private final List<String[]> targets = new ArrayList<>();
    /** The shape scenario's rounds (see {@link ShapeScenario}), or null. */
    private List<ShapeScenario.Round> shapeRounds;

    private final List<String[]> errors = new ArrayList<>();

    /** Which of several consecutive runs this is (1..), or 0 when the bench makes one run. */
    private final int run;
    /** /proc/loadavg's 1-minute figure when the run started and when it ended (the box may be shared). */
    private final String loadAtStart;

    private String loadAtEnd = "n/a";

    Report(BenchConfig config, int run) {
        this.config = config;
        this.run = run;
        this.loadAtStart = loadAverage();
    }

    /** The 1-minute load average, or "n/a" where /proc/loadavg cannot be read. */
    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException | RuntimeException e) {
            return "n/a";
        }
    }

    /** The targets of the last {@link #render()}: figure, measured, target, "met" or "**missed**". */
    List<String[]> targets() {
        return List.copyOf(targets);
    }

    int run() {
        return run;
    }

    String loads() {
        return loadAtStart + " -> " + loadAtEnd;
    }

    void machine(Infra infra) {
        machine = String.format(
                Locale.ROOT,
                "%d cores (%s %s), Java %s (%s), Redis %s%s, RabbitMQ %s",
                Runtime.getRuntime().availableProcessors(),
                System.getProperty("os.name"),
                System.getProperty("os.arch"),
                System.getProperty("java.version"),
                System.getProperty("java.vm.name"),
                infra.redisVersion(),
                config.privateRedis() ? " (private instance started by bench.sh)" : " (shared)",
                infra.rabbitVersion());
    }

    void elapsed(long ms) {
        elapsedMs = ms;
        loadAtEnd = loadAverage();
    }

    void relayDefault(Scenarios.Drain all, Scenarios.Drain spread) {
        relayAll = all;
        relaySpread = spread;
    }

    Scenarios.Drain relayDefaultAll() {
        return relayAll;
    }

    void sweep(Scenarios.Drain d) {
        sweep.add(d);
    }

    void relayBest(Scenarios.Drain all, Scenarios.Drain spread) {
        bestAll = all;
        bestSpread = spread;
    }

    void ceiling(Scenarios.Drain best, List<Scenarios.Drain> all) {
        ceiling = best;
        ceilings = all;
    }

    void perfTest(Scenarios.Drain d) {
        perfTest = d;
    }

    void perfTestRelayShaped(Scenarios.Drain d) {
        perfTestShaped = d;
    }

    void instances(Scenarios.Drain d) {
        threeInstances = d;
    }

    void seed(Scenarios.Drain all, Scenarios.Drain spread) {
        seedAll = all;
        seedSpread = spread;
    }

    void redisson(Scenarios.Drain all, Scenarios.Drain spread) {
        redissonAll = all;
        redissonSpread = spread;
    }

    void idle(Scenarios.Idle idle) {
        idles.add(idle);
    }

    void lag(Scenarios.Lag lag) {
        lags.add(lag);
    }

    /** A part of the run that failed: shown in the report (with its first lines) instead of its figures. */
    void error(String part, Throwable error) {
        String text = String.valueOf(error);
        Throwable cause = error.getCause();
        while (cause != null && cause != error) {
            text += "; caused by " + cause;
            error = cause;
            cause = cause.getCause();
        }
        errors.add(new String[] {part, text.replace('\n', ' ').replace("|", "\\|")});
    }

    boolean failed() {
        return !errors.isEmpty();
    }

    void shape(List<ShapeScenario.Round> rounds) {
        shapeRounds = rounds;
    }

    private void renderShape(StringBuilder b) {
        if (shapeRounds == null || shapeRounds.isEmpty()) {
            return;
        }
        b.append(ShapeScenario.render(shapeRounds, config.drainMessages()));
        String full = ShapeScenario.eachRatio(shapeRounds, ShapeScenario.RELAY_FULL, ShapeScenario.PERF_FULL);
        double fullMin = min(shapeRounds, ShapeScenario.RELAY_FULL, ShapeScenario.PERF_FULL);
        target("relay / PerfTest with the relay's shape (shape rounds)", full, ">= 0.95", fullMin >= 0.95);
        String lean = ShapeScenario.eachRatio(shapeRounds, ShapeScenario.RELAY_LEAN, ShapeScenario.PLAIN);
        double leanMin = min(shapeRounds, ShapeScenario.RELAY_LEAN, ShapeScenario.PLAIN);
        target("relay (lean shape) / plain PerfTest (shape rounds)", lean, ">= 0.9", leanMin >= 0.9);
    }

    private static double min(List<ShapeScenario.Round> rounds, String a, String b) {
        double min = Double.POSITIVE_INFINITY;
        for (ShapeScenario.Round r : rounds) {
            min = Math.min(min, ShapeScenario.medianRatio(List.of(r), a, b));
        }
        return min;
    }

    void backlog(Scenarios.Drain with, Scenarios.Drain without) {
        backlogWith = with;
        backlogWithout = without;
    }

    /** The storm scenario's runs and the PerfTest ceilings measured before and after them (empty when not run). */
    void storm(List<Storm.Result> results, List<Scenarios.Drain> perfTests) {
        storm = results;
        stormPerfTests = perfTests;
    }

    void coldMoves(ColdTierBench.Moves moves) {
        coldMoves = moves;
    }

    void coldPlain(ColdTierBench.Plain plain) {
        coldPlain = plain;
    }

    void coldLag(ColdTierBench.Lag lag) {
        coldLag = lag;
    }

    void intake(IntakeBench.Result result) {
        intake = result;
    }

    void schedules(ScheduleBench.Result result) {
        schedules = result;
    }

    /** Issue 42's figures as target rows. */
    private void scheduleTargets() {
        if (schedules == null) {
            return;
        }
        ScheduleBench.Lag l = schedules.lag();
        target(
                "schedules: fire lag p99 (slot → published), every 1 s, 3 instances, ms (early, duplicates, missing)",
                String.format(
                        Locale.ROOT,
                        "%d (%d, %d, %d)",
                        l.publishMs()[1],
                        l.earlyPublished() + l.earlyReceived(),
                        l.duplicates(),
                        l.missing()),
                "<= 50, early 0, exactly once",
                l.publishMs()[1] >= 0
                        && l.publishMs()[1] <= 50
                        && l.earlyPublished() + l.earlyReceived() == 0
                        && l.duplicates() == 0
                        && l.missing() == 0);
        double added = ScheduleBench.added(schedules);
        target(
                "schedules: Redis commands/s 10,000 idle schedules of 1 min add, fleet of 3 (fleet total)",
                String.format(
                        Locale.ROOT, "%,.0f (%,.0f)", added, schedules.with().commandsPerSecond()),
                "<= 200",
                added <= 200);
        double perSchedule =
                schedules.with().commandsPerSecond() / schedules.with().schedules();
        target(
                "schedules: Redis commands/s per idle schedule (fleet total / 10,000)",
                String.format(Locale.ROOT, "%.3f", perSchedule),
                "<= 1",
                perSchedule <= 1);
    }

    /** Issue 41's figures as target rows. */
    private void intakeTargets() {
        if (intake == null) {
            return;
        }
        IntakeBench.Result r = intake;
        double ratio = r.intakeRate() / r.perfTestRate();
        target(
                "intake → delivered / PerfTest publish + consume",
                String.format(Locale.ROOT, "%.2f", ratio),
                ">= 0.45",
                r.perfTestRate() > 0 && ratio >= 0.45);
        target(
                "intake lag p99 at 1,000 msg/s, ms (early, lost)",
                String.format(Locale.ROOT, "%d (%d, %d)", r.lagMs()[1], r.early(), r.lagN() - r.lagReceived()),
                "<= 30, early 0, lost 0",
                r.lagMs()[1] <= 30 && r.early() == 0 && r.lagReceived() == r.lagN());
        target("intake: Redis bytes per waiting entry", f1(r.bytesPerEntry()), "<= 260", r.bytesPerEntry() <= 260);
        target(
                "intake: Redis bytes per waiting entry once cold",
                f1(r.bytesPerColdEntry()),
                "<= 60",
                r.bytesPerColdEntry() <= 60);
        target(
                "intake: Redis bytes per waiting entry, JSON bodies",
                f1(r.bytesPerJsonEntry()),
                "<= 260",
                r.bytesPerJsonEntry() <= 260);
        target(
                "intake: Redis bytes per waiting entry once cold, JSON bodies",
                f1(r.bytesPerColdJsonEntry()),
                "<= 60",
                r.bytesPerColdJsonEntry() <= 60);
    }

    /** Issue 27's figures as target rows, so that --runs lines the cold runs up too. */
    private void coldTargets() {
        if (coldMoves != null) {
            ColdTierBench.Moves m = coldMoves;
            target("cold tier: Redis bytes per cold entry", f1(m.coldBytes()), "<= 60", m.coldBytes() <= 60);
            if (coldPlain != null) {
                ColdTierBench.Plain p = coldPlain;
                target(
                        "cold tier: Redis bytes per cold entry, plain-ZADD member (~110 B JSON)",
                        f1(p.coldBytes()),
                        "<= 60",
                        p.coldBytes() <= 60);
            }
            target(
                    "cold tier: demotion, entries/s",
                    String.format(Locale.ROOT, "%,.0f", m.demoteRate()),
                    ">= 50,000",
                    m.demoteRate() >= 50_000);
            target(
                    "cold tier: promotion, entries/s",
                    String.format(Locale.ROOT, "%,.0f", m.promoteRate()),
                    ">= 50,000",
                    m.promoteRate() >= 50_000);
            target(
                    "cold tier: cancel / reschedule of a cold entry, p99 ms",
                    String.format(Locale.ROOT, "%.2f / %.2f", m.cancelMs()[1], m.rescheduleMs()[1]),
                    "<= 5",
                    m.cancelMs()[1] <= 5 && m.rescheduleMs()[1] <= 5);
        }
        if (coldLag != null) {
            ColdTierBench.Lag l = coldLag;
            target(
                    "cold tier: lag of promoted entries at 2k/s, p99 ms (early, lost)",
                    String.format(Locale.ROOT, "%d (%d, %d)", l.lagMs()[1], l.early(), l.n() - l.received()),
                    "<= 15, early 0, lost 0",
                    l.lagMs()[1] <= 15 && l.early() == 0 && l.received() == l.n());
        }
    }

    /** The RELAY_* environment variables of this run (Spring's relaxed binding makes them relay settings). */
    static String relayEnvironment() {
        return System.getenv().entrySet().stream()
                .filter(e -> e.getKey().startsWith("RELAY_"))
                .map(e -> "`" + e.getKey() + "=" + e.getValue() + "`")
                .sorted()
                .collect(java.util.stream.Collectors.joining(", "));
    }

    String render() {
        StringBuilder b = new StringBuilder();
        targets.clear();
        b.append("# delay-relay benchmark, ")
                .append(LocalDate.now())
                .append(run > 0 ? ", run " + run : "")
                .append(" (")
                .append(config.full() ? "full" : "quick")
                .append(" mode)\n\n");
        b.append("Machine: ")
                .append(machine)
                .append(". Run took ")
                .append(elapsedMs / 1000)
                .append(" s. Load average (1 min) at its start and end: ")
                .append(loads())
                .append(". ")
                .append("Absolute figures are noisy on a shared machine; the ratios are measured in the same run.\n\n");
        String relayEnvironment = relayEnvironment();
        if (!relayEnvironment.isEmpty()) {
            b.append(
                            "Relay settings from the environment (every relay of this run, in-process and exec jar, reads them: "
                                    + "they change its defaults): ")
                    .append(relayEnvironment)
                    .append(".\n\n");
        }
        if (!errors.isEmpty()) {
            b.append("## Errors: these parts failed, their figures are missing below\n\n| part | error |\n|---|---|\n");
            for (String[] e : errors) {
                b.append("| ").append(e[0]).append(" | ").append(e[1]).append(" |\n");
            }
            b.append('\n');
        }
        renderDrain(b);
        renderMemory(b);
        renderIdle(b);
        renderLag(b);
        renderBacklog(b);
        renderShape(b);
        Storm.render(b, storm, stormPerfTests);
        ColdTierBench.render(b, coldMoves, coldPlain, coldLag);
        coldTargets();
        IntakeBench.render(b, intake);
        intakeTargets();
        ScheduleBench.render(b, schedules);
        scheduleTargets();
        if (!targets.isEmpty()) {
            b.append("## Targets (issues 6 and 12; shown, not asserted)\n\n");
            b.append("| figure | measured | target | |\n|---|---:|---:|---|\n");
            for (String[] t : targets) {
                b.append("| ").append(String.join(" | ", t)).append(" |\n");
            }
            b.append('\n');
        }
        b.append(
                """
                Method: drain = messages/s from the due instant T (chosen after loading ends) until a passive
                queue.declare reports N messages in the durable queue; loading is not timed. Baselines (seed, Redisson)
                are capped at %d s of draining and their rate is what they delivered in that time. Redis commands
                are INFO commandstats deltas over the drain window (Redis counts the commands a script runs as well as
                the EVALSHA itself); Redis CPU is used_cpu_sys+used_cpu_user delta; JVM CPU is the process CPU time of the
                harness JVM (the contender, plus a passive queue.declare every 5 ms) over the same window; unreported warm-up drains
                run until one compiles under 300 ms in its window (JIT compiling is start-up cost, not per-message cost),
                each drain waits for an idle JIT before loading, and the lag scenario's per-message stamps are not
                recorded. Memory = used_memory delta after loading
                N 100-byte messages. Seed = blog 004's Lua (zrangebyscore limit 1 + zremrangebyrank), INCR-cursor
                shard choice, convertAndSend without confirms, 100 ms sleep after an empty round. Redisson =
                RDelayedQueue.offer + threads polling the RBlockingQueue and publishing without confirms.
                """
                        .formatted(config.baselineCapMs() / 1000));
        return b.toString();
    }

    private void renderDrain(StringBuilder b) {
        if (relayAll == null) {
            return;
        }
        b.append(String.format(
                Locale.ROOT,
                "## 1. Drain: %,d messages of %d B over %d shards, durable queue%n%n",
                config.drainMessages(),
                config.messageBytes(),
                config.shards()));
        b.append(
                "| contender | settings | all due at once, msg/s | due over 1 s, msg/s | EVALSHA / 1k | "
                        + "Redis commands / 1k | Redis CPU s / 100k | JVM CPU ms / 1k |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
        row(b, relayAll, relaySpread);
        if (bestAll != null) {
            row(b, bestAll, bestSpread);
        }
        if (ceiling != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | n/a | 0 | 0 | 0 | %.0f |%n",
                    ceiling.label(),
                    ceiling.settings(),
                    rate(ceiling),
                    ceiling.clientCpuMsPer1k()));
        }
        row(b, seedAll, seedSpread);
        row(b, redissonAll, redissonSpread);
        b.append('\n');
        List<String> others = new ArrayList<>();
        for (Scenarios.Drain d : sweep) {
            others.add(d.settings() + ": " + rate(d));
        }
        for (Scenarios.Drain d : ceilings) {
            others.add("ceiling " + d.settings() + ": " + rate(d));
        }
        b.append("Sweep (all at once, msg/s): ")
                .append(String.join("; ", others))
                .append(".\n\n");

        Scenarios.Drain best = bestAll != null && bestAll.rate() > relayAll.rate() ? bestAll : relayAll;
        Scenarios.Drain bestS = bestAll != null && bestAll.rate() > relayAll.rate() ? bestSpread : relaySpread;
        if (perfTest != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "%nRabbitMQ PerfTest (own JVM; %s, %,d persistent %d B messages, "
                            + "confirms, durable queue, no consumer): %s msg/s.%n",
                    perfTest.settings(),
                    perfTest.n(),
                    config.messageBytes(),
                    rate(perfTest)));
            target(
                    "relay / RabbitMQ PerfTest, all at once (defaults / best)",
                    ratio(relayAll, perfTest) + " / " + ratio(best, perfTest),
                    ">= 0.8 at defaults",
                    ratioOf(relayAll, perfTest) >= 0.8);
        }
        if (perfTestShaped != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "RabbitMQ PerfTest with the relay's message shape (%s): %s msg/s; relay / it (defaults / best): "
                            + "%s / %s.%n",
                    perfTestShaped.settings(),
                    rate(perfTestShaped),
                    ratio(relayAll, perfTestShaped),
                    ratio(best, perfTestShaped)));
        }
        renderCpuSplit(b, best);
        if (threeInstances != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "%n3 relay instances (defaults each), all at once: %s msg/s, " + "%.1f Redis commands / 1k.%n",
                    rate(threeInstances),
                    threeInstances.commandsPer1k()));
            target(
                    "3 relay instances / 1 instance, all at once",
                    ratio(threeInstances, relayAll),
                    ">= 1.0",
                    ratioOf(threeInstances, relayAll) >= 0.995);
            target(
                    "Redis commands per 1,000 relayed, 3 instances (EVALSHA / total)",
                    f1(threeInstances.scriptsPer1k()) + " / " + f1(threeInstances.commandsPer1k()),
                    "<= 30 (total)",
                    threeInstances.commandsPer1k() <= 30);
        }
        target(
                // the figure's name stays the same from run to run: --runs lines the runs up by it
                "JVM CPU per relayed message, defaults / best, µs (Java threads only)",
                f1(relayAll.clientCpuMsPer1k()) + " / " + f1(best.clientCpuMsPer1k()) + " ("
                        + f1(relayAll.microsPerMessage(relayAll.javaThreadsCpuNanos())) + " / "
                        + f1(best.microsPerMessage(best.javaThreadsCpuNanos())) + ")",
                "<= 20",
                relayAll.clientCpuMsPer1k() <= 20);
        if (ceiling != null) {
            target(
                    "relay / ceiling (publish from memory), all at once (defaults / best)",
                    ratio(relayAll, ceiling) + " / " + ratio(best, ceiling),
                    ">= 0.9",
                    ratioOf(relayAll, ceiling) >= 0.9);
        }
        if (seedAll != null) {
            target(
                    "relay / seed, all at once (defaults / best)",
                    ratio(relayAll, seedAll) + " / " + ratio(best, seedAll),
                    ">= 1.0",
                    ratioOf(best, seedAll) >= 1.0);
        }
        if (redissonAll != null) {
            target(
                    "relay / Redisson, all at once (defaults / best)",
                    ratio(relayAll, redissonAll) + " / " + ratio(best, redissonAll),
                    ">= 10",
                    ratioOf(best, redissonAll) >= 10);
            target(
                    "relay / Redisson, due over 1 s (defaults / best)",
                    ratio(relaySpread, redissonSpread) + " / " + ratio(bestS, redissonSpread),
                    ">= 1.0",
                    ratioOf(bestS, redissonSpread) >= 1.0);
        }
        target(
                "Redis commands per 1,000 relayed, defaults (EVALSHA / total)",
                f1(relayAll.scriptsPer1k()) + " / " + f1(relayAll.commandsPer1k()),
                "<= 40 (total)",
                relayAll.commandsPer1k() <= 40);
        if (best != relayAll) {
            target(
                    "Redis commands per 1,000 relayed, best settings (EVALSHA / total)",
                    f1(best.scriptsPer1k()) + " / " + f1(best.commandsPer1k()) + " (" + best.settings() + ")",
                    "<= 40 (total)",
                    best.commandsPer1k() <= 40);
        }
    }

    /**
     * Where the cores go: CPU per message of every process in each drain-shaped run (same window as its rate), and
     * the rate those costs allow if the processes had the machine's cores to themselves.
     */
    private void renderCpuSplit(StringBuilder b, Scenarios.Drain best) {
        List<Scenarios.Drain> rows = new ArrayList<>();
        if (perfTest != null) {
            rows.add(perfTest);
        }
        if (perfTestShaped != null) {
            rows.add(perfTestShaped);
        }
        if (ceiling != null) {
            rows.add(ceiling);
        }
        rows.add(relayAll);
        if (best != relayAll) {
            rows.add(best);
        }
        if (threeInstances != null) {
            // three relays in the harness JVM: does scaling out cost CPU per message (the machine's cores are shared)?
            rows.add(threeInstances);
        }
        int cores = Runtime.getRuntime().availableProcessors();
        b.append(String.format(
                Locale.ROOT,
                "%nWhere the %d cores go, all due at once (CPU µs per message over the measured window; RabbitMQ = "
                        + "every local beam.smp, shared with anything else using the broker then; Redis = "
                        + "used_cpu_sys+user of the private instance; JVM = the harness JVM: the relay or the "
                        + "ceiling's publishers, plus the harness's queue.declare every 5 ms; PerfTest = its own JVM "
                        + "from its first message in the queue to the last; bound = %d cores / total):%n%n",
                cores,
                cores));
        b.append(
                "| contender | settings | msg/s | RabbitMQ | Redis | JVM | of which Java threads | PerfTest JVM | total "
                        + "| bound, msg/s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Scenarios.Drain d : rows) {
            double broker = d.microsPerMessage(d.brokerCpuNanos());
            double redis = d.microsPerMessage(Math.round(d.redis().cpuSeconds() * 1e9));
            double jvm = d.microsPerMessage(d.clientCpuNanos());
            double perf = d.microsPerMessage(d.perfTestCpuNanos());
            double javaThreads = d.microsPerMessage(d.javaThreadsCpuNanos());
            double total = nz(broker) + nz(redis) + nz(jvm) + nz(perf);
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    d.label(),
                    d.settings(),
                    rate(d),
                    f1(broker),
                    f1(redis),
                    f1(jvm),
                    f1(javaThreads),
                    f1(perf),
                    f1(total),
                    total > 0 && !Double.isNaN(broker)
                            ? String.format(Locale.ROOT, "%,.0f", cores * 1e6 / total)
                            : "n/a"));
        }
    }

    private static double nz(double v) {
        return Double.isNaN(v) ? 0 : v;
    }

    private void row(StringBuilder b, Scenarios.Drain all, Scenarios.Drain spread) {
        if (all == null) {
            return;
        }
        b.append(String.format(
                Locale.ROOT,
                "| %s | %s | %s | %s | %s | %s | %.2f | %.0f |%n",
                all.label(),
                all.settings(),
                rate(all),
                spread == null ? "n/a" : rate(spread),
                f1(all.scriptsPer1k()),
                f1(all.commandsPer1k()),
                all.cpuPer100k(),
                all.clientCpuMsPer1k()));
    }

    private void renderMemory(StringBuilder b) {
        if (relayAll == null) {
            return;
        }
        b.append(String.format(
                Locale.ROOT,
                "## 4. Memory: Redis used_memory per scheduled %d-byte message (%,d loaded)%n%n",
                config.messageBytes(),
                config.drainMessages()));
        b.append("| layout | bytes / message |\n|---|---:|\n");
        b.append(String.format(
                Locale.ROOT, "| relay (member = message in K:i zsets) | %.0f |%n", relayAll.bytesPerMessage()));
        if (seedAll != null) {
            b.append(String.format(Locale.ROOT, "| seed (same zset layout) | %.0f |%n", seedAll.bytesPerMessage()));
        }
        if (redissonAll != null) {
            b.append(String.format(
                    Locale.ROOT,
                    "| Redisson RDelayedQueue (timeout zset + ordering list) | %.0f |%n",
                    redissonAll.bytesPerMessage()));
        }
        b.append('\n');
        target(
                "Redis bytes per scheduled message (relay)",
                String.format(Locale.ROOT, "%.0f", relayAll.bytesPerMessage()),
                "<= 215",
                relayAll.bytesPerMessage() <= 215);
    }

    private void renderIdle(StringBuilder b) {
        if (idles.isEmpty()) {
            return;
        }
        b.append(String.format(
                Locale.ROOT,
                "## 5. Idle cost: %d businesses x %d shards, nothing due, %d s%n%n",
                idles.get(0).businesses(),
                idles.get(0).shards(),
                config.idleSeconds()));
        b.append("| settings | relay instances | Redis commands/s (total) | EVALSHA/s | busiest commands/s |\n"
                + "|---|---:|---:|---:|---|\n");
        for (Scenarios.Idle idle : idles) {
            StringBuilder top = new StringBuilder();
            idle.top().forEach((k, v) -> top.append(top.length() == 0 ? "" : ", ")
                    .append(k)
                    .append(' ')
                    .append(String.format(Locale.ROOT, "%.0f", v)));
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %d | %.0f | %.0f | %s |%n",
                    idle.settings(),
                    idle.instances(),
                    idle.commandsPerSecond(),
                    idle.scriptsPerSecond(),
                    top));
            // issue 25: the fleet's idle cost, whatever its size: <= 130/s with notifications, <= 1,000/s polling
            boolean notified = idle.settings().startsWith("notifications on");
            int bound = notified ? 130 : 1_000;
            target(
                    "idle Redis commands/s, " + idle.instances() + " instance(s), " + idle.settings(),
                    String.format(Locale.ROOT, "%.0f", idle.commandsPerSecond()),
                    "<= " + bound + " (fleet)",
                    idle.commandsPerSecond() <= bound);
        }
        b.append('\n');
    }

    private void renderLag(StringBuilder b) {
        if (lags.isEmpty()) {
            return;
        }
        b.append(String.format(
                Locale.ROOT,
                "## 2. Lag at steady load: due 1-5 s ahead, %d s per rate; lag = consumer receive time - due time%n%n",
                config.lagSeconds()));
        b.append("JVMs 3: one relay JVM, started once and warmed up by " + LagProcesses.WARM_UP_SECONDS
                + " s of traffic before the first run, as a daemon runs, serves every 3-JVM run as its exec jar (`java -jar relay-app-*-exec.jar`, 1 business, 16 shards, "
                + "defaults), the producer and the consumer each in their own JVM (bench LagProcess); "
                + "each run's fresh producer and consumer warm up for " + LagProcesses.NEXT_WARM_UP_SECONDS
                + " s, and the measured phase starts once no JIT compiler thread of the three JVMs used CPU for "
                + LagProcesses.JIT_IDLE_MS / 1000 + " s; cores busy = CPU time / wall time of the measured phase "
                + "until the last message arrived (broker: every beam.smp; Redis: used_cpu of the private "
                + "instance; producer: its own measured phase); the relay's log is kept in bench/results/logs/. JVMs 1: relay (in-process Spring context), producer "
                + "and consumer in the harness JVM, as a user's app embedding the relay would; the baselines run "
                + "that way too.\n\n");
        b.append("| contender | JVMs | rate msg/s (achieved) | sent | received | p50 ms | p99 ms | p999 ms | max ms |\n"
                + "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Scenarios.Lag l : lags) {
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %d | %,d (%,.0f) | %,d | %,d | %d | %d | %d | %d |%n",
                    l.label(),
                    separate(l) ? 3 : 1,
                    l.rate(),
                    l.achievedRate(),
                    l.sent(),
                    l.received(),
                    l.p50(),
                    l.p99(),
                    l.p999(),
                    l.max()));
        }
        stageTable(
                b,
                Scenarios.Stages.SEPARATE,
                "\nWhere the lag goes, relay in its own JVM (p50 / p99 / p999 ms per stage; publish instant from the "
                        + "relay's x-delay-relayed-at header, due from x-delay-due-at, receive instant in the "
                        + "consumer's JVM; relay JVM CPU per message over the measured phase):\n\n",
                true);
        stageTable(
                b,
                Scenarios.Stages.IN_PROCESS,
                "\nWhere the lag goes, relay in the harness JVM (p50 / p99 / p999 ms per stage; publish instant from "
                        + "the relay's x-delay-relayed-at header, due from x-delay-due-at, receive instant in the "
                        + "consumer):\n\n",
                false);
        SteadyCost.render(b);
        steadyTargets();
        b.append('\n');
        for (Scenarios.Lag l : lags) {
            if (!separate(l)) {
                continue; // the targets are judged on the relay in its own JVM
            }
            long[] share = l.stages().percentiles()[0]; // due->published: the relay's share of the lag
            if (l.label().equals("relay") && l.rate() == 5_000) {
                target(
                        "relay lag p99 at 5k/s (relay-api producer), ms (relay's share: due->published p99)",
                        l.p99() + " (" + share[1] + ")",
                        "<= 30",
                        l.p99() <= 30);
                target(
                        "relay lag p999 at 5k/s (relay-api producer), ms (relay's share: due->published p999)",
                        l.p999() + " (" + share[2] + ")",
                        "<= 60",
                        l.p999() <= 60);
            }
            if (l.label().equals("relay") && l.rate() == 2_000) {
                target(
                        "relay lag p99 at 2k/s (relay-api producer), ms (relay's share: due->published p99)",
                        l.p99() + " (" + share[1] + ")",
                        "<= 15",
                        l.p99() <= 15);
            }
            if (l.label().equals(BATCH_PRODUCER) && l.rate() == 5_000) {
                target(
                        "relay lag p99 / p999 at 5k/s (relay-api producer, batches), ms (relay's share)",
                        l.p99() + " / " + l.p999() + " (" + share[1] + " / " + share[2] + ")",
                        "<= 30 / 60",
                        l.p99() <= 30 && l.p999() <= 60);
            }
            if (l.label().equals(BATCH_PRODUCER) && l.rate() == 2_000) {
                target(
                        "relay lag p99 at 2k/s (relay-api producer, batches), ms (relay's share)",
                        l.p99() + " (" + share[1] + ")",
                        "<= 15",
                        l.p99() <= 15);
            }
            if (l.label().equals("relay, plain ZADD producer") && l.rate() == 1_000) {
                target(
                        "pick-up p99 of plain ZADD entries at 1k/s: due->published by the relay, ms (due->received)",
                        share[1] + " (" + l.p99() + ")",
                        "<= 20",
                        share[1] <= 20);
            }
        }
    }

    /** The label of the lag run whose producer sends relay-api batches ({@code scheduleAll}). */
    static final String BATCH_PRODUCER = "relay, relay-api batches producer";

    /** Issue 25's steady-state targets, at 2,000 msg/s (the relay-api producer's run and the plain ZADD one). */
    private void steadyTargets() {
        for (SteadyCost c : SteadyCost.ALL) {
            if (c.rate() != 2_000) {
                continue;
            }
            boolean api = c.label().equals("relay") || c.label().equals(BATCH_PRODUCER);
            String who = c.label().equals("relay")
                    ? " (relay-api producer)"
                    : api ? " (relay-api producer, batches)" : " (plain ZADD producer)";
            target(
                    "relay JVM cores at 2k/s" + who + " (broker cores)",
                    String.format(Locale.ROOT, "%.2f (%.2f)", c.relayCores(), c.brokerCores()),
                    "<= 0.10 and <= 0.25x broker",
                    c.relayCores() <= 0.10 && c.relayCores() <= 0.25 * c.brokerCores());
            target(
                    "Redis cores at 2k/s" + who + ", producer writes included",
                    String.format(Locale.ROOT, "%.2f", c.redisCores()),
                    "<= 0.12",
                    c.redisCores() <= 0.12);
            // the relay-api producer's schedule.lua is one EVALSHA per message of its own
            double relayEvalsha = c.evalshaPerMessage() - (api ? 1.0 : 0.0);
            target(
                    "EVALSHA per relayed message at 2k/s" + who + ", the relay's",
                    String.format(Locale.ROOT, "%.3f", relayEvalsha),
                    "<= 0.05",
                    relayEvalsha <= 0.05);
        }
    }

    private static boolean separate(Scenarios.Lag l) {
        return l.stages() != null && l.stages().names() == Scenarios.Stages.SEPARATE;
    }

    private void stageTable(StringBuilder b, String[] names, String heading, boolean cpu) {
        if (lags.stream().noneMatch(l -> l.stages() != null && l.stages().names() == names)) {
            return;
        }
        b.append(heading);
        b.append("| contender | rate | joined |");
        for (String name : names) {
            b.append(' ').append(name).append(" |");
        }
        if (cpu) {
            b.append(" relay JVM CPU µs/msg | cores busy: relay / broker / Redis / producer / consumer = total |");
        }
        b.append("\n|---|---:|---:|");
        b.append("---:|".repeat(names.length + (cpu ? 2 : 0)));
        b.append('\n');
        for (Scenarios.Lag l : lags) {
            if (l.stages() == null || l.stages().names() != names) {
                continue;
            }
            b.append(String.format(
                    Locale.ROOT,
                    "| %s | %,d | %,d |",
                    l.label(),
                    l.rate(),
                    l.stages().joined()));
            for (long[] p : l.stages().percentiles()) {
                b.append(String.format(Locale.ROOT, " %d / %d / %d |", p[0], p[1], p[2]));
            }
            if (cpu) {
                b.append(' ').append(f1(l.stages().relayCpuMicrosPerMessage())).append(" |");
                b.append(' ')
                        .append(l.stages().cores() == null ? "n/a" : l.stages().cores())
                        .append(" |");
            }
            b.append('\n');
        }
    }

    private void renderBacklog(StringBuilder b) {
        if (backlogWith == null) {
            return;
        }
        b.append(String.format(
                Locale.ROOT,
                "## 3. Backlog independence: drain of %,d due messages (defaults)%n%n",
                config.drainMessages()));
        b.append("| far-future entries present | msg/s |\n|---|---:|\n");
        b.append(String.format(Locale.ROOT, "| none | %s |%n", rate(backlogWithout)));
        b.append(String.format(Locale.ROOT, "| %,d | %s |%n%n", config.backlogEntries(), rate(backlogWith)));
        target(
                "drain with backlog / without",
                ratio(backlogWith, backlogWithout),
                ">= 0.9",
                ratioOf(backlogWith, backlogWithout) >= 0.9);
    }

    private void target(String figure, String measured, String target, boolean met) {
        targets.add(new String[] {figure, measured, target, met ? "met" : "**missed**"});
    }

    private static String rate(Scenarios.Drain d) {
        String r = String.format(Locale.ROOT, "%,.0f", d.rate());
        if (d.capped()) {
            r += String.format(Locale.ROOT, " (capped: %,d in %.0f s)", d.delivered(), d.elapsedMs() / 1000.0);
        }
        if (d.loadOverlapped()) {
            r += " (load overlapped T)";
        }
        return r;
    }

    private static double ratioOf(Scenarios.Drain a, Scenarios.Drain b) {
        return a == null || b == null || b.rate() == 0 ? Double.NaN : a.rate() / b.rate();
    }

    private static String ratio(Scenarios.Drain a, Scenarios.Drain b) {
        return String.format(Locale.ROOT, "%.2fx", ratioOf(a, b));
    }

    private static String f1(double v) {
        return Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.1f", v);
    }

    Path write() throws IOException {
        Files.createDirectories(config.resultsDir());
        // A partial run (--only) never overwrites the full report of the day.
        String part = config.only().isEmpty() ? "" : "-only-" + String.join("-", config.only());
        Path file = config.resultsDir()
                .resolve(LocalDate.now() + (config.full() ? "-full" : "") + part + (run > 0 ? "-run" + run : "")
                        + ".md");
        Files.writeString(
                file,
                render() + "\n_Written " + LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)
                        + " by scripts/bench.sh" + (config.full() ? " --full" : "") + "._\n");
        return file;
    }
}
