package io.delayrelay.app.engine;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.delayrelay.app.engine.EngineFixture.ConfirmingPublisher;
import io.delayrelay.app.engine.EngineFixture.CountingEvents;
import io.delayrelay.app.engine.EngineFixture.HoldingPublisher;
import io.delayrelay.app.engine.amqp.AmqpBatchPublisher;
import io.delayrelay.app.engine.wake.KeyspaceWakeSource;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The worker loop's defects of issue 11 (2b, 6, 8, 9) and the loop's shape (issue 15), each reproduced by driving
 * a business's engine pieces directly against the real Redis.
 */
class PopWorkerLoopTest {

    /** Nothing listens here (a port the OS just handed out and took back): a broker that takes nothing. */
    private static final int NO_BROKER_PORT = FreePort.next();

    private final EngineFixture f = new EngineFixture();

    @AfterEach
    void cleanUp() {
        f.close();
    }

    /**
     * Defect 2b: a worker popped before it had room, so the entries' lease ran while it waited. Its room is its
     * in-flight budget, {@link InFlightBudget#BATCHES_OF_DATA} batch-sizes of messages however small the batches: it
     * pops while a whole batch still fits.
     */
    @Test
    void aWorkerPopsOnlyWithinItsInFlightBudget() {
        BusinessSpec spec = f.spec("slot").shards(12).batchSize(2).build();
        long now = f.kit.redisNowMs();
        for (int shard = 0; shard < 12; shard++) {
            f.zadd(spec, shard, "entry-" + shard, now - 1_000);
        }
        HoldingPublisher publisher = new HoldingPublisher();
        f.start(spec, publisher, RelayEvents.NOOP);
        Thread worker = EngineFixture.worker(spec, 0);
        // every shard is due: each pop takes one entry of two shards (the call's batch of 2), so it pops while 2
        // more fit in 8, i.e. until 4 batches (8 entries) are in flight
        int batches = InFlightBudget.BATCHES_OF_DATA;
        int inFlight = InFlightBudget.BATCHES_OF_DATA * 2;

        await().atMost(Duration.ofSeconds(10))
                .until(() ->
                        publisher.pending.size() == batches && EngineFixture.parkedIn(worker, InFlightBudget.class));

        assertThat(f.inflight(spec))
                .as("entries in flight while the budget awaits confirms")
                .isEqualTo(inFlight);
        assertThat(f.store.pops.get()).isEqualTo(batches);
        publisher.pending.get(0).complete(List.of(PublishOutcome.CONFIRMED, PublishOutcome.CONFIRMED));
        await().atMost(Duration.ofSeconds(10))
                .until(() -> publisher.pending.size() == batches + 1
                        && EngineFixture.parkedIn(worker, InFlightBudget.class));
        assertThat(f.inflight(spec))
                .as("one more batch popped for the one settled")
                .isEqualTo(inFlight);
    }

    /**
     * A worker does not wait for the broker between batches of one shard: while the first awaits its confirms it
     * pops and publishes the next, in due order (one channel keeps them in that order at the broker).
     */
    @Test
    void aWorkerPublishesTheNextBatchOfAShardWhileTheFirstAwaitsItsConfirms() {
        BusinessSpec spec = f.spec("pipeline").shards(1).batchSize(2).build();
        long now = f.kit.redisNowMs();
        for (int i = 0; i < 6; i++) {
            f.zadd(spec, 0, "entry-" + i, now - 1_000 + i);
        }
        HoldingPublisher publisher = new HoldingPublisher();
        f.start(spec, publisher, RelayEvents.NOOP);

        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published.size() == 6);

        assertThat(publisher.pending)
                .as("three batches awaiting confirms at once")
                .hasSize(3);
        assertThat(publisher.published)
                .extracting(DueMessage::bodyAsString)
                .containsExactly("entry-0", "entry-1", "entry-2", "entry-3", "entry-4", "entry-5");
    }

    @Test
    void aWorkerSleepsInsteadOfSpinningWhenItsOnlyShardIsQuarantined() {
        assertSleepsWhenEveryShardIsQuarantined(1);
    }

    /** Defect 6: the same with every shard of several quarantined. */
    @Test
    void aWorkerSleepsInsteadOfSpinningWhenEveryShardIsQuarantined() {
        assertSleepsWhenEveryShardIsQuarantined(3);
    }

    private void assertSleepsWhenEveryShardIsQuarantined(int shards) {
        BusinessSpec spec = f.spec("spin").shards(shards).build();
        for (int shard = 0; shard < shards; shard++) {
            f.breakShard(spec, shard);
        }
        CountingEvents events = new CountingEvents();
        BusinessRelay relay = f.start(spec, new ConfirmingPublisher(), events);

        await().atMost(Duration.ofSeconds(10))
                .until(() -> relay.quarantinedShards().size() == shards);
        // several shards: one pop of all of them fails, then each is popped on its own to find the bad ones
        int pops = shards == 1 ? 1 : shards + 1;
        await().during(Duration.ofMillis(800)).atMost(Duration.ofSeconds(2)).until(() -> f.store.pops.get() == pops);

        assertThat(events.errors.get()).as("one error per broken shard").isEqualTo(shards);
        // it wakes every max-idle to look again: seen asleep in the wake signal, not caught in one sample
        Thread worker = EngineFixture.worker(spec, 0);
        await().atMost(Duration.ofSeconds(2)).until(() -> EngineFixture.parkedIn(worker, WakeSignal.class));
    }

    /** Defect 8: an OutOfMemoryError (a huge pop reply) ended the worker thread for good. */
    @Test
    void aWorkerSurvivesAnOutOfMemoryErrorAndDeliversAfterwards() {
        BusinessSpec spec = f.spec("oom").build();
        f.zadd(spec, 0, "after-the-error", f.kit.redisNowMs() - 1_000);
        f.store.failNextPop.set(new OutOfMemoryError("simulated: a pop reply too large for the heap"));
        ConfirmingPublisher publisher = new ConfirmingPublisher();
        CountingEvents events = new CountingEvents();
        BusinessRelay relay = f.start(spec, publisher, events);

        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.bodies().contains("after-the-error"));

        assertThat(relay.liveWorkers()).isEqualTo(1);
        assertThat(events.errors.get()).as("the error is counted").isEqualTo(1);
    }

    /**
     * Two announcements in a row reach sleeping workers before they run: an entry due now in one shard, then one due
     * in 1.5 s in another. A wake-up names only the latest: the workers must still pop the first at once (they
     * slept until the second's due time before, as the schedule was not read again).
     */
    @Test
    void anEntryDueNowIsPoppedAtOnceThoughALaterAnnouncementFollowedItsWakeUp() {
        BusinessSpec spec = f.spec("twowakes")
                .shards(16)
                .threads(2)
                .maxIdle(Duration.ofMinutes(10))
                .build();
        ConfirmingPublisher publisher = new ConfirmingPublisher();
        BusinessRelay relay = f.start(spec, publisher, RelayEvents.NOOP);
        await().atMost(Duration.ofSeconds(10))
                .until(() -> EngineFixture.parkedIn(EngineFixture.worker(spec, 0), WakeSignal.class)
                        && EngineFixture.parkedIn(EngineFixture.worker(spec, 1), WakeSignal.class));

        long now = f.kit.redisNowMs();
        f.zadd(spec, 3, "due now", now);
        f.zadd(spec, 11, "due later", now + 1_500);
        relay.announce(3, now);
        relay.announce(11, now + 1_500);

        await().atMost(Duration.ofSeconds(1)).until(() -> publisher.bodies().contains("due now"));
        assertThat(publisher.bodies())
                .as("the later one waits for its due time")
                .containsExactly("due now");
        await().atMost(Duration.ofSeconds(5)).until(() -> publisher.bodies().size() == 2);
        assertThat(f.kit.redisNowMs()).isGreaterThanOrEqualTo(now + 1_500);
    }

    /** Issue 15: a stray interrupt ended a worker for good; only a stop may end it. */
    @Test
    void aWorkerSurvivesAStrayInterrupt() {
        BusinessSpec spec = f.spec("interrupt").maxIdle(Duration.ofSeconds(30)).build();
        ConfirmingPublisher publisher = new ConfirmingPublisher();
        BusinessRelay relay = f.start(spec, publisher, RelayEvents.NOOP);
        Thread worker = EngineFixture.worker(spec, 0);
        await().atMost(Duration.ofSeconds(10)).until(() -> EngineFixture.parkedIn(worker, WakeSignal.class));

        worker.interrupt();
        f.zadd(spec, 0, "after-the-interrupt", f.kit.redisNowMs() - 1_000);
        relay.announce(0, 0);

        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.bodies().contains("after-the-interrupt"));
        assertThat(worker.isAlive()).isTrue();
        assertThat(relay.liveWorkers()).isEqualTo(1);
    }

    /** Defect 8: a worker that died anyway (an error escaped its loop) stayed dead; it is restarted and counted. */
    @Test
    void aDeadWorkerIsStartedAgainAndCounted() {
        BusinessSpec spec = f.spec("dead").build();
        f.zadd(spec, 0, "after-the-restart", f.kit.redisNowMs() - 1_000);
        f.store.failNextPop.set(new IllegalStateException("simulated: one failed pop"));
        AtomicInteger listenerCalls = new AtomicInteger();
        CountingEvents events = new CountingEvents() {
            @Override
            public void error(BusinessSpec s, int shard, Throwable error) {
                super.error(s, shard, error);
                if (listenerCalls.incrementAndGet() == 1) {
                    throw new AssertionError("simulated: a broken listener kills the worker");
                }
            }
        };
        ConfirmingPublisher publisher = new ConfirmingPublisher();
        RelayEngine engine = new RelayEngine(
                List.of(spec),
                f.store,
                publisher,
                events,
                f.clock,
                f.kit.redisFactory(),
                new RelayEngine.Settings(
                        Duration.ofMillis(100),
                        Duration.ofMillis(500),
                        false,
                        Duration.ofSeconds(5),
                        0,
                        new KeyspaceWakeSource.Settings(KeyspaceWakeSource.Mode.OFF, false, Duration.ofSeconds(5)),
                        RelayEngine.Settings.DEFAULT_START_RETRY,
                        "(address not known)",
                        "(address not known)",
                        ShardDivision.Settings.DEFAULT));
        engine.start();
        try {
            // the restarted worker may deliver before the restart is counted: wait for both
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> publisher.bodies().contains("after-the-restart") && events.workerRestarts.get() == 1);
            assertThat(engine.relays().get(spec.name()).liveWorkers()).isEqualTo(1);
        } finally {
            engine.stop();
        }
    }

    /**
     * Defect 9: the failure count was reset by every successful pop, so while the broker took nothing (pops kept
     * working) the worker never backed off beyond the first step.
     */
    @Test
    void backOffGrowsWhileTheBrokerTakesNothingAlthoughPopsSucceed() {
        BusinessSpec spec = f.spec("backoff")
                .maxIdle(Duration.ofMillis(100))
                .retryDelay(Duration.ofMillis(10), Duration.ofMinutes(1))
                .build();
        f.zadd(spec, 0, "waits-for-the-broker", f.kit.redisNowMs() - 1_000);
        CachingConnectionFactory noBroker = new CachingConnectionFactory("127.0.0.1", NO_BROKER_PORT);
        noBroker.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.CORRELATED);
        noBroker.setPublisherReturns(true);
        AmqpBatchPublisher real = new AmqpBatchPublisher(noBroker, f.clock);
        List<Long> attempts = new CopyOnWriteArrayList<>();
        BatchPublisher recording = new BatchPublisher() {
            @Override
            public CompletableFuture<List<PublishOutcome>> publish(BusinessSpec s, List<DueMessage> batch) {
                attempts.add(System.nanoTime());
                return real.publish(s, batch);
            }

            @Override
            public void prepareExchange(BusinessSpec s) {}
        };
        try {
            f.start(spec, recording, RelayEvents.NOOP);
            await().atMost(Duration.ofSeconds(15)).until(() -> attempts.size() >= 5);
        } finally {
            noBroker.destroy();
        }

        long fourthGapMs = TimeUnit.NANOSECONDS.toMillis(attempts.get(4) - attempts.get(3));
        long expectedMs = PopWorker.backOffMs(spec, 4);
        assertThat(expectedMs).isEqualTo(1_600);
        assertThat(fourthGapMs)
                .as("wait after the 4th failed publish in a row")
                .isGreaterThanOrEqualTo(expectedMs - 100);
    }

    /**
     * Batches whose outcome hangs (a broker call stuck under a RabbitMQ alarm) stall neither the settling of the
     * business's other batches nor the worker: the settle threads wait on no publisher.
     */
    @Test
    void otherBatchesSettleWhileAPublishersFollowUpHangs() {
        BusinessSpec spec = f.spec("hang").shards(4).batchSize(2).build();
        long now = f.kit.redisNowMs();
        for (int shard = 0; shard < 4; shard++) {
            f.zadd(spec, shard, "entry-" + shard, now - 1_000);
        }
        CountDownLatch brokerAnswers = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        ExecutorService broker = Executors.newCachedThreadPool();
        BatchPublisher hanging = new BatchPublisher() {
            @Override
            public CompletableFuture<List<PublishOutcome>> publish(BusinessSpec s, List<DueMessage> batch) {
                // the first pop carries two shards' entries (the call's batch of 2), the second the other two
                boolean hangs = calls.incrementAndGet() <= 1;
                return CompletableFuture.supplyAsync(
                        () -> {
                            if (hangs) {
                                awaitQuietly(brokerAnswers);
                            }
                            return batch.stream()
                                    .map(m -> PublishOutcome.CONFIRMED)
                                    .toList();
                        },
                        broker);
            }

            @Override
            public void prepareExchange(BusinessSpec s) {}
        };
        try {
            f.start(spec, hanging, RelayEvents.NOOP);
            await().atMost(Duration.ofSeconds(10)).until(() -> calls.get() == 2);
            await().atMost(Duration.ofSeconds(5)).until(() -> f.inflight(spec) == 2);
        } finally {
            brokerAnswers.countDown();
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> f.inflight(spec) == 0);
        broker.shutdown();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
