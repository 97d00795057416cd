package io.delayrelay.app.ops;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.metrics.RelayMeterNames;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;

/**
 * This instance's relayed count and lag histogram for a business, read from its meters. Both are cumulative since
 * start: a reader that wants a rate or a recent p99 takes two readings and subtracts (the console does).
 */
final class LocalThroughput {

    private final MeterRegistry registry;

    LocalThroughput(MeterRegistry registry) {
        this.registry = registry;
    }

    /** {@code relayed} and {@code lagBuckets} ([upper bound ms, cumulative count] pairs), or empty without meters. */
    Map<String, Object> read(String business) {
        Map<String, Object> figures = new LinkedHashMap<>();
        Counter relayed = registry.find(RelayMeterNames.RELAYED)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .counter();
        Timer lag = registry.find(RelayMeterNames.LAG)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .timer();
        if (relayed == null || lag == null) {
            return figures;
        }
        figures.put("relayed", (long) relayed.count());
        List<long[]> buckets = new ArrayList<>();
        for (CountAtBucket b : lag.takeSnapshot().histogramCounts()) {
            buckets.add(new long[] {(long) b.bucket(TimeUnit.MILLISECONDS), (long) b.count()});
        }
        figures.put("lagCount", lag.count());
        figures.put("lagBuckets", buckets);
        return figures;
    }
}
