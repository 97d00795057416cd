package io.delayrelay.bench;

import java.nio.file.Path;
import java.util.List;

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

    static BenchConfig of(
            boolean full,
            int messages,
            String redisHost,
            int redisPort,
            boolean privateRedis,
            String rabbitHost,
            int rabbitPort,
            Path resultsDir,
            List<String> only) {
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
                    new int[][] {{2, 500}, {4, 250}, {4, 1000}, {8, 500}},
                    120_000,
                    300_000,
                    new int[] {2_000, 5_000, 10_000},
                    60,
                    new int[] {2_000, 5_000, 10_000},
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
                new int[][] {{4, 500}},
                8_000,
                120_000,
                new int[] {2_000, 5_000},
                10,
                new int[] {5_000},
                1_000_000,
                10,
                10,
                resultsDir,
                only);
    }

    boolean runs(String scenario) {
        return only.isEmpty() || only.contains(scenario);
    }
}
