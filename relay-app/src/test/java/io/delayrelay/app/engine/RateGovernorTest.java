package io.delayrelay.app.engine;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.RateGovernor.RateCharge;
import io.delayrelay.app.trigger.BusinessSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.ReturnType;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fleet-wide rate cap against the real Redis: rate.lua's token bucket ({@code K:rate}, Redis time) and the
 * {@link RateGovernor} the workers of one instance share.
 */
class RateGovernorTest {

    private static final String RATE_SCRIPT = readScript();

    private final EngineFixture f = new EngineFixture();
    private final String key =
            DelayQueueKeys.forBusiness(f.kit.business("ratekey")).rate();
    private final String clockKey = key + ":test-clock";

    private static String readScript() {
        try (InputStream in = RateGovernorTest.class.getResourceAsStream("/io/delayrelay/app/lua/rate.lua")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @AfterEach
    void cleanUp() {
        f.close();
    }

    /** rate.lua with its one TIME call reading {@link #clockKey} instead, so that the test decides the time. */
    private RateCharge charge(int rate, long burst, int want, long chunk, long back) {
        String script = RATE_SCRIPT.replace("redis.call('TIME')", "redis.call('HMGET', '" + clockKey + "', 's', 'us')");
        try (RedisConnection c = f.kit.redis()) {
            List<Object> reply = c.scriptingCommands()
                    .eval(
                            bytes(script),
                            ReturnType.MULTI,
                            1,
                            bytes(key),
                            bytes(Integer.toString(rate)),
                            bytes(Long.toString(burst)),
                            bytes(Integer.toString(want)),
                            bytes(Long.toString(chunk)),
                            bytes(Long.toString(back)));
            return new RateCharge(
                    ((Number) reply.get(0)).intValue(),
                    ((Number) reply.get(1)).longValue(),
                    ((Number) reply.get(2)).longValue());
        }
    }

    private void setNow(long ms) {
        try (RedisConnection c = f.kit.redis()) {
            c.hashCommands()
                    .hMSet(
                            bytes(clockKey),
                            Map.of(
                                    bytes("s"), bytes(Long.toString(ms / 1000)),
                                    bytes("us"), bytes(Long.toString(ms % 1000 * 1000))));
        }
    }

    @Test
    void aFullBucketGrantsItsBurstThenAChunkEachTimeOneHasRefilledOnRedisTime() {
        BusinessSpec spec =
                f.spec("rate").batchSize(500).build().toBuilder().maxRate(1000).build();
        assertThat(RateGovernor.burst(spec)).isEqualTo(100);
        assertThat(RateGovernor.chunk(spec)).isEqualTo(20);
        long t = 1_800_000_000_000L;

        setNow(t);
        assertThat(charge(1000, 100, 500, 20, 0)).isEqualTo(new RateCharge(100, 20, 0));
        assertThat(charge(1000, 100, 500, 20, 0)).isEqualTo(new RateCharge(0, 20, 0));
        setNow(t + 19);
        assertThat(charge(1000, 100, 500, 20, 0))
                .as("19 tokens: less than a chunk")
                .isEqualTo(new RateCharge(0, 1, 19));
        setNow(t + 20);
        assertThat(charge(1000, 100, 500, 20, 0)).isEqualTo(new RateCharge(20, 20, 0));
        setNow(t + 10_000);
        assertThat(charge(1000, 100, 30, 20, 0))
                .as("a long pause refills the burst, no more")
                .isEqualTo(new RateCharge(30, 0, 70));
        setNow(t + 5_000);
        assertThat(charge(1000, 100, 0, 20, 0))
                .as("a clock that stepped back refills nothing")
                .isEqualTo(new RateCharge(0, 0, 70));
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.keyCommands().pTtl(bytes(key)))
                    .as("expires after two full refills")
                    .isBetween(1L, 1000L);
        }
    }

    @Test
    void unusedTokensGoBackUpToTheBurst() {
        setNow(1_800_000_000_000L);
        assertThat(charge(1000, 100, 100, 20, 0)).isEqualTo(new RateCharge(100, 20, 0));

        assertThat(charge(1000, 100, 0, 20, 60)).isEqualTo(new RateCharge(0, 0, 60));
        assertThat(charge(1000, 100, 0, 20, 1_000))
                .as("never more than the burst")
                .isEqualTo(new RateCharge(0, 0, 100));
    }

    @Test
    void aChangedRateRefillsAtTheNewRateFromTheLevelLeftAndCapsItAtTheNewBurst() {
        long t = 1_800_000_000_000L;
        setNow(t);
        assertThat(charge(1000, 100, 0, 20, 0).left()).isEqualTo(100);
        assertThat(charge(10, 1, 0, 1, 0).left()).as("the new burst").isEqualTo(1);
        assertThat(charge(10, 1, 5, 1, 0)).isEqualTo(new RateCharge(1, 100, 0));
        setNow(t + 100);
        assertThat(charge(10, 1, 5, 1, 0)).isEqualTo(new RateCharge(1, 100, 0));
    }

    @Test
    void aBusinessWithoutACapNeverAsksRedis() {
        BusinessSpec spec = f.spec("rate").batchSize(500).build();
        RateGovernor governor = new RateGovernor(f.store.redis(), new EventReporter(RelayEvents.NOOP));

        assertThat(governor.take(spec, 500)).isEqualTo(500);
        governor.giveBack(spec, 400);
        assertThat(governor.closedForMs(spec)).isZero();
        try (RedisConnection c = f.kit.redis()) {
            assertThat(c.keyCommands().exists(bytes(spec.keys().rate()))).isFalse();
        }
    }

    @Test
    void aReloadedRateAppliesAtOnceWhateverTheGateOfTheOldRateSaid() {
        BusinessSpec slow =
                f.spec("rate").batchSize(500).build().toBuilder().maxRate(1).build();
        RateGovernor governor = new RateGovernor(f.store.redis(), new EventReporter(RelayEvents.NOOP));
        assertThat(governor.take(slow, 500)).isEqualTo(1);
        assertThat(governor.take(slow, 500)).isZero();
        // one token a second: closed for the rest of the second (the machine may be slow between the two calls)
        assertThat(governor.closedForMs(slow)).isBetween(300L, 1001L);

        BusinessSpec fast = slow.toBuilder().maxRate(10_000).build();
        assertThat(governor.closedForMs(fast)).isZero();
        // the bucket kept its (empty) level: the new rate refills it within a chunk's time (200 tokens in 20 ms)
        long start = System.nanoTime();
        int granted = 0;
        while (granted == 0 && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(2)) {
            granted = governor.take(fast, 500);
        }
        assertThat(granted).isBetween(200, 1000);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(500);
    }

    /**
     * Two instances (each its own store and governor) with four workers each take from one bucket for 2 s at 2,000/s:
     * together they get the burst plus 2 s of refill, within 5 %, and none of them spins (few Redis calls).
     */
    @Test
    void twoInstancesTogetherGetTheRateFleetWideAndSleepWhileTheBucketIsEmpty() throws Exception {
        BusinessSpec spec =
                f.spec("rate").batchSize(500).build().toBuilder().maxRate(2000).build();
        AtomicLong granted = new AtomicLong();
        AtomicLong calls = new AtomicLong();
        long durationMs = 2_000;
        List<Thread> workers = new ArrayList<>();
        long started = System.nanoTime();
        for (int instance = 0; instance < 2; instance++) {
            RateGovernor governor = new RateGovernor(
                    ByteRedisTemplates.create(f.kit.redisFactory()), new EventReporter(RelayEvents.NOOP));
            for (int w = 0; w < 4; w++) {
                Thread thread = new Thread(() -> {
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(durationMs);
                    try {
                        while (System.nanoTime() < end) {
                            long closed = governor.closedForMs(spec);
                            if (closed > 0) {
                                RateGovernor.sleep(
                                        Math.min(closed, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime()) + 1));
                                continue;
                            }
                            calls.incrementAndGet();
                            granted.addAndGet(governor.take(spec, 500));
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                thread.start();
                workers.add(thread);
            }
        }
        for (Thread worker : workers) {
            worker.join();
        }
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        long left = new RateGovernor(f.store.redis(), new EventReporter(RelayEvents.NOOP))
                .charge(spec.keys(), 2000, RateGovernor.burst(spec), 0, RateGovernor.chunk(spec), 0)
                .left();
        // what the bucket gave out: its burst plus the refill over the whole run, less what is still in it
        long expected = RateGovernor.burst(spec) + 2000 * elapsedMs / 1000 - left;
        System.out.printf(
                "FIGURE rate bucket: 2 instances x 4 workers, 2,000/s for %d ms: granted %d (burst + refill - left ="
                        + " %d, %d left), %d charges%n",
                elapsedMs, granted.get(), expected, left, calls.get());
        // a bucket full for longer than a tenth of a second (every worker held up at once on a loaded machine)
        // overflows: the fleet then gets less, never more
        assertThat(granted.get()).isBetween(expected * 90 / 100, expected);
        // a chunk (40) per charge at best; at worst each of the 8 workers asks once per chunk refilled (spinning
        // workers would ask tens of thousands of times)
        assertThat(calls.get()).isLessThan(expected / RateGovernor.chunk(spec) * 8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
