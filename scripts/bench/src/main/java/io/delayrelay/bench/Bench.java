package io.delayrelay.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Entry point of scripts/bench.sh: runs the scenarios, prints the table and writes it to bench-results/.
 *
 * <pre>
 * Bench [--full] [--messages N] [--redis host:port] [--private-redis] [--rabbit host:port] [--out DIR] [--only s1,s2,...]
 * scenarios: drain, memory (from drain loads), lag, backlog, idle
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
        Path out = Path.of("bench-results");
        List<String> only = List.of();
        Path perfTestClasspath = null;
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
                default -> throw new IllegalArgumentException("unknown argument: " + args[i]);
            }
        }
        BenchConfig config = BenchConfig.of(
                full, messages, host(redis), port(redis), privateRedis, host(rabbit), port(rabbit), out, only);
        long started = System.currentTimeMillis();
        Report report = new Report(config);
        try (Infra infra = new Infra(config)) {
            report.machine(infra);
            Scenarios s = new Scenarios(infra);
            run(config, infra, s, report, perfTestClasspath);
        }
        report.elapsed(System.currentTimeMillis() - started);
        String text = report.render();
        System.out.println(text);
        Path file = report.write();
        System.err.println("[bench] results written to " + file);
        System.exit(0);
    }

    private static void run(BenchConfig config, Infra infra, Scenarios s, Report report, Path perfTestClasspath)
            throws Exception {
        String x = s.exchange();
        long cap = config.drainCapMs();
        long baselineCap = config.baselineCapMs();
        int defaultThreads = 2;
        if (config.runs("drain")) {
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
            Scenarios.Drain relayAll =
                    s.drain(new RelayContender(infra, "relay", x, Map.of()), "defaults: 2 threads, batch 500", 0, cap);
            report.relayDefault(
                    relayAll,
                    s.drain(
                            new RelayContender(infra, "relay", x, Map.of()),
                            "defaults: 2 threads, batch 500",
                            1_000,
                            cap));
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
        if (config.runs("idle")) {
            // With keyspace notifications (the private Redis has them on), then without (polling at max-idle).
            boolean notify = config.privateRedis();
            report.idle(s.idle(null, 1, notify));
            report.idle(s.idle(null, 3, notify));
            report.idle(s.idle(null, 1, false));
        }
        if (config.runs("lag")) {
            for (int rate : config.lagRates()) {
                report.lag(s.lag(new RelayContender(infra, "relay", x, Map.of()), rate, config.lagSeconds()));
            }
            // Entries written by a bare ZADD (no wake-up): picked up through keyspace notifications.
            for (int rate : new int[] {1_000, 5_000}) {
                report.lag(s.lag(
                        new RelayContender(infra, "relay, plain ZADD producer", x, Map.of(), 1, true),
                        rate,
                        config.lagSeconds()));
            }
            for (int rate : config.baselineLagRates()) {
                report.lag(s.lag(new SeedContender(infra, x, defaultThreads), rate, config.lagSeconds()));
                report.lag(s.lag(new RedissonContender(infra, x, defaultThreads), rate, config.lagSeconds()));
            }
        }
        if (config.runs("backlog")) {
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
