package io.delayrelay.bench;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;

/** Sizes and endpoints of one benchmark run; quick and full presets. */
record BenchConfig(
        boolean full,
        String redisHost,
        int redisPort,
        boolean privateRedis,
        String rabbitHost,
        int rabbitPort,
        int drainMessages,
        int shards,
        int messageBytes,
        int[][] sweep,
        long baselineCapMs,
        long drainCapMs,
        int[] lagRates,
        int lagSeconds,
        int[] baselineLagRates,
        int backlogEntries,
        int idleBusinesses,
        int idleSeconds,
        Path resultsDir,
        List<String> only) {

    /** Messages per drain in quick mode: see bench.sh --help for why it is not 200,000. */
    static final int QUICK_MESSAGES = 50_000;
    /**
     * Seconds per lag rate in quick mode. The steady window is the phase less its first
     * {@link LagProcesses#STEADY_FROM_SECONDS} s: at 10 s per rate it was 5 s, shorter than the spread of the relay's
     * own CPU from one 5 s window to the next at a constant 2,000 msg/s (0.06-0.19 cores in a quiet 2-minute run).
     */
    static final int QUICK_LAG_SECONDS = 30;

    static BenchConfig of(
            boolean full,
            int messages,
            String redisHost,
            int redisPort,
            boolean privateRedis,
            String rabbitHost,
            int rabbitPort,
            Path resultsDir,
            List<String> only,
            int lagSeconds) {
        if (lagSeconds != 0 && (lagSeconds < 10 || lagSeconds > 600)) {
            throw new IllegalArgumentException("--lag-seconds must be 10..600, was " + lagSeconds);
        }
        if (full) {
            return new BenchConfig(
                    true,
                    redisHost,
                    redisPort,
                    privateRedis,
                    rabbitHost,
                    rabbitPort,
                    messages > 0 ? messages : 1_000_000,
                    16,
                    100,
                    // {2, 500} is the relay's default before the default batch-size rose to 1000: kept to compare
                    // with the defaults' results of before; {4, 1000} is the defaults with 4 threads.
                    new int[][] {{2, 500}, {4, 250}, {4, 1000}, {8, 500}},
                    // Baselines capped at 30 s of draining (their rate is what they delivered in that time), and
                    // their lag at 5k/s only (Redisson does not keep up with 5k/s here): keeps --full near 40 min.
                    30_000,
                    300_000,
                    new int[] {2_000, 5_000, 10_000},
                    lagSeconds > 0 ? lagSeconds : 60,
                    new int[] {5_000},
                    10_000_000,
                    10,
                    10,
                    resultsDir,
                    only);
        }
        return new BenchConfig(
                false,
                redisHost,
                redisPort,
                privateRedis,
                rabbitHost,
                rabbitPort,
                messages > 0 ? messages : QUICK_MESSAGES,
                16,
                100,
                // Pinned at batch 500 (the default before it rose to 1000) to compare with the "4 threads, batch
                // 500" results of before; it now differs from the defaults in both threads and batch-size.
                new int[][] {{4, 500}},
                8_000,
                120_000,
                new int[] {2_000, 5_000},
                lagSeconds > 0 ? lagSeconds : QUICK_LAG_SECONDS,
                new int[] {5_000},
                1_000_000,
                10,
                10,
                resultsDir,
                only);
    }

    /** Rates of the plain-ZADD producer in the lag scenario: 1k/s (the pick-up target) and the relay-api rates. */
    int[] zaddLagRates() {
        return IntStream.concat(IntStream.of(1_000), IntStream.of(lagRates))
                .distinct()
                .toArray();
    }

    /** Rates of the relay-api producer sending batches (scheduleAll) in the lag scenario: the relay-api rates. */
    int[] batchLagRates() {
        return lagRates.clone();
    }

    /**
     * Rough duration of the drain scenario, for the progress lines: per relay drain the load (~60k msg/s), the drain
     * (~14k msg/s) and a start; the ceilings (~18k msg/s) and PerfTest (~20k msg/s); seed and Redisson loads (~20k
     * msg/s) and their drains (up to the cap).
     */
    double drainEstimateSeconds() {
        double n = drainMessages;
        int relayDrains = 5 + sweep.length;
        double relay = relayDrains * (n / 60_000 * 1.3 + 1 + n / 14_000 + 3);
        double ceilings = (full ? 3 : 2) * n / 18_000 + n / 20_000 + 5;
        double baselines = 4 * (n / 20_000 + Math.min(baselineCapMs / 1000.0, n / 13_000) + 3);
        return relay + ceilings + baselines;
    }

    /** Rough duration of the backlog scenario: loading the backlog (~100k entries/s) and one drain. */
    double backlogEstimateSeconds() {
        return backlogEntries / 100_000.0 + drainMessages / 60_000.0 * 1.3 + drainMessages / 14_000.0 + 5;
    }

    /** One lag run with the relay, producer and consumer in three JVMs: JVM starts and stops, warm-up, last dues. */
    double separateLagEstimateSeconds() {
        return lagSeconds + 3 + 5 + 25;
    }

    /** One lag run in the harness JVM: the run and the last dues. */
    double inProcessLagEstimateSeconds() {
        return lagSeconds + 5 + 5;
    }

    /** Rounds of the shape scenario (every variant once per round). */
    static final int SHAPE_ROUNDS = 3;

    /** Rough duration of the shape scenario: per round 12 PerfTest runs (JVM start, ~15k msg/s), 2 relay drains. */
    double shapeEstimateSeconds() {
        double perRound = 12 * (drainMessages / 15_000.0 + 3)
                + 2 * (drainMessages / 60_000.0 * 1.3 + drainMessages / 14_000.0 + 4);
        return 30 + SHAPE_ROUNDS * perRound;
    }

    /** Rough duration of the scenarios this run selected. */
    double estimateSeconds() {
        double total = 0;
        if (runs("drain")) {
            total += drainEstimateSeconds();
        }
        if (runs("idle")) {
            total += 3 * (idleSeconds + 5);
        }
        if (runs("lag")) {
            total += (lagRates.length + zaddLagRates().length + batchLagRates().length) * separateLagEstimateSeconds()
                    + (2 + 2 * baselineLagRates.length) * inProcessLagEstimateSeconds();
        }
        if (runs("backlog")) {
            total += backlogEstimateSeconds();
        }
        if (runs("shape")) {
            total += shapeEstimateSeconds();
        }
        return total;
    }

    boolean runs(String scenario) {
        return only.isEmpty() || only.contains(scenario);
    }
}
