package io.delayrelay.app.engine;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link DueGate}: an entry popped ahead is released once the pop's Redis time plus the monotonic time since its
 * reply reaches its due time, and the relay's clock (the relayed-at stamp's) too; never before, whatever the host's
 * wall clock says. And {@link RedisClock} does not step back for a reading whose reply took longer to come back.
 */
class DueGateTest {

    @Test
    void releasesAtTheDueTimeCountedFromTheReplyNeverBefore() throws InterruptedException {
        AtomicLong wall = new AtomicLong(5_000_000); // a host clock far ahead of Redis: never read once Redis was
        RedisClock clock = new RedisClock(wall::get, System::nanoTime);
        long redisNow = 1_000_000;
        long received = System.nanoTime();
        clock.observe(redisNow);
        DueGate gate = new DueGate(redisNow, received, clock);

        assertThat(gate.due(redisNow)).isTrue();
        assertThat(gate.due(redisNow - 10)).isTrue();
        long started = System.nanoTime();
        gate.await(redisNow + 30);
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - received);
        assertThat(waitedMs)
                .as("waited at least until the due time on the monotonic clock")
                .isGreaterThanOrEqualTo(30);
        assertThat(clock.nowMs()).as("the stamp's clock reached it too").isGreaterThanOrEqualTo(redisNow + 30);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(2_000);
    }

    @Test
    void waitsForTheRelaysClockWhenItTrailsThePop() throws InterruptedException {
        AtomicLong nanos = new AtomicLong(0);
        RedisClock clock = new RedisClock(() -> 0L, nanos::get);
        clock.observe(900); // an older, lower reading
        // the pop's own reading says 1000 at receipt; the clock's says 900: release follows the lower of the two
        DueGate gate = new DueGate(1_000, System.nanoTime(), clock);
        assertThat(gate.nowMs()).isEqualTo(900);
        assertThat(gate.due(950)).isFalse();
        nanos.set(TimeUnit.MILLISECONDS.toNanos(60));
        assertThat(gate.due(950)).isTrue();
    }

    @Test
    void theClockKeepsTheBetterOfTwoReadingsForASecondThenFollowsRedis() {
        AtomicLong nanos = new AtomicLong(0);
        RedisClock clock = new RedisClock(() -> 0L, nanos::get);
        clock.observe(1_000);
        nanos.set(TimeUnit.MILLISECONDS.toNanos(10));
        clock.observe(1_004); // a reply that took 6 ms longer to come back: a worse bound
        assertThat(clock.nowMs()).as("no step back").isEqualTo(1_010);
        clock.observe(1_020); // a better bound is taken
        assertThat(clock.nowMs()).isEqualTo(1_020);
        nanos.set(TimeUnit.MILLISECONDS.toNanos(10) + RedisClock.KEEP_NANOS);
        clock.observe(1_500); // Redis's clock stepped back (or ran slower): followed once the held reading is old
        assertThat(clock.nowMs()).isEqualTo(1_500);
    }
}
