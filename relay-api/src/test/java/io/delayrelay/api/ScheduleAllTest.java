package io.delayrelay.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.connection.zset.Tuple;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * {@link DelayedMessageProducer#scheduleAll}: a batch writes exactly what the single calls write, in one round trip,
 * and a failed request fails alone, named. Against a real Redis (REDIS_HOST/REDIS_PORT, default 127.0.0.1:6379);
 * fails, never skips, when it is down.
 */
class ScheduleAllTest {

    private static final long BASE = 1_900_000_000_000L;
    private final String tag = UUID.randomUUID().toString().substring(0, 8);
    private final String batched = "batch-test-" + tag;
    private final String single = "batch-single-" + tag;
    private LettuceConnectionFactory factory;
    private RedisDelayedMessageProducer producer;

    @BeforeEach
    void connect() {
        factory = LocalRedis.connect();
        producer = new RedisDelayedMessageProducer(factory, 16, Duration.ofSeconds(5), DelayQueueKeys::forBusiness);
    }

    @AfterEach
    void cleanUp() {
        try (RedisConnection c = factory.getConnection()) {
            for (String business : List.of(batched, single)) {
                DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
                for (int i = 0; i < 16; i++) {
                    c.keyCommands().del(b(keys.shard(i)), b(keys.payloads(i)), b(keys.attempts(i)));
                }
                c.keyCommands().del(b(keys.meta()));
            }
        }
        factory.destroy();
    }

    /** 500 requests of every kind: by message and by id, at an instant and after a delay, by id with options. */
    private static List<ScheduleRequest> mixed() {
        List<ScheduleRequest> requests = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            requests.add(ScheduleRequest.message(
                    ("message-" + i).getBytes(StandardCharsets.UTF_8), Instant.ofEpochMilli(BASE + i)));
            requests.add(ScheduleRequest.messageAfter(
                    ("after-" + i).getBytes(StandardCharsets.UTF_8),
                    Duration.ofHours(1).plusMillis(i)));
            requests.add(ScheduleRequest.byId(
                    "order-" + i,
                    ("{\"order\":" + i + "}").getBytes(StandardCharsets.UTF_8),
                    Instant.ofEpochMilli(BASE + 1_000 + i)));
            requests.add(
                    ScheduleRequest.byIdAfter("later-" + i, new byte[] {(byte) i, 0, (byte) 255}, Duration.ofHours(2)));
            requests.add(ScheduleRequest.byId(
                            "tenant-" + i, b("{\"tenant\":" + i + "}"), Instant.ofEpochMilli(BASE + 2_000 + i))
                    .withOptions(ScheduleOptions.create()
                            .expiresAfterDue(Duration.ofMinutes(5))
                            .header("tenant", "t" + i)));
        }
        return requests;
    }

    @Test
    void aBatchWritesExactlyWhatTheSingleCallsWrite() {
        List<ScheduleRequest> requests = mixed();
        long before = redisTime();
        long[] due = producer.scheduleAll(batched, requests);
        long[] alone = new long[requests.size()];
        for (int i = 0; i < alone.length; i++) {
            alone[i] = requests.get(i).sendAlone(producer, single);
        }
        long after = redisTime();

        assertThat(due).hasSize(500);
        for (int i = 0; i < due.length; i++) {
            ScheduleRequest r = requests.get(i);
            if (r.dueAt() != null) {
                assertThat(due[i])
                        .as("due time of #%d", i)
                        .isEqualTo(r.dueAt().toEpochMilli())
                        .isEqualTo(alone[i]);
            } else {
                assertThat(due[i])
                        .as("due time of #%d, from Redis time", i)
                        .isBetween(
                                before + r.delay().toMillis(), after + r.delay().toMillis());
            }
        }
        // the same members in the same shards, the same payload bytes (envelopes with options included)
        DelayQueueKeys b = DelayQueueKeys.forBusiness(batched);
        DelayQueueKeys s = DelayQueueKeys.forBusiness(single);
        int entries = 0;
        for (int shard = 0; shard < 16; shard++) {
            Map<String, Double> batchShard = zset(b.shard(shard));
            Map<String, Double> singleShard = zset(s.shard(shard));
            assertThat(batchShard.keySet()).as("members of shard %d", shard).isEqualTo(singleShard.keySet());
            batchShard.forEach((member, score) -> {
                if (!member.startsWith("after-") && !member.startsWith("later-")) {
                    assertThat(score).as("score of %s", member).isEqualTo(singleShard.get(member));
                }
            });
            entries += batchShard.size();
            assertThat(hash(b.payloads(shard)))
                    .as("payloads of shard %d", shard)
                    .isEqualTo(hash(s.payloads(shard)));
        }
        assertThat(entries).isEqualTo(500);
        assertThat(producer.count(batched)).isEqualTo(500);
    }

    @Test
    void theWholeBatchTakesOneRoundTrip() throws Exception {
        long delayMs = 150;
        try (DelayingProxy proxy = new DelayingProxy(delayMs)) {
            LettuceConnectionFactory slow =
                    new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", proxy.port()));
            slow.afterPropertiesSet();
            slow.start();
            try {
                RedisDelayedMessageProducer far =
                        new RedisDelayedMessageProducer(slow, 16, Duration.ofMinutes(5), DelayQueueKeys::forBusiness);
                // connection, shard count and script cache warmed up: what is timed is the schedules alone
                far.scheduleAll(batched, List.of(ScheduleRequest.message(b("warm-up"), Instant.ofEpochMilli(BASE))));
                long t0 = System.nanoTime();
                for (int i = 0; i < 4; i++) {
                    far.schedule(batched, "alone-" + i, Instant.ofEpochMilli(BASE));
                }
                long aloneMs = (System.nanoTime() - t0) / 1_000_000;
                assertThat(aloneMs)
                        .as("4 single calls wait for 4 delayed round trips")
                        .isGreaterThanOrEqualTo(4 * delayMs);

                List<ScheduleRequest> batch = new ArrayList<>();
                for (int i = 0; i < 500; i++) {
                    batch.add(ScheduleRequest.byId("b-" + i, b("payload " + i), Instant.ofEpochMilli(BASE + i)));
                }
                long t1 = System.nanoTime();
                long[] due = far.scheduleAll(batched, batch);
                long batchMs = (System.nanoTime() - t1) / 1_000_000;
                long[] expected = new long[500];
                for (int i = 0; i < 500; i++) {
                    expected[i] = BASE + i;
                }
                assertThat(due).containsExactly(expected);
                assertThat(batchMs)
                        .as("500 schedules, one delayed round trip (4 single calls took %d ms)", aloneMs)
                        .isLessThan(3 * delayMs);
            } finally {
                slow.destroy();
            }
        }
        assertThat(producer.count(batched)).isEqualTo(505);
    }

    @Test
    void aFailedRequestFailsAloneAndIsNamed() {
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(batched);
        int broken = ShardSelector.shardOf("order-3", 16);
        try (RedisConnection c = factory.getConnection()) {
            c.stringCommands().set(b(keys.shard(broken)), b("not a zset"));
        }
        List<ScheduleRequest> requests = new ArrayList<>();
        Set<Integer> expectedFailures = new TreeSet<>();
        for (int i = 0; i < 64; i++) {
            requests.add(ScheduleRequest.byId("order-" + i, b("m" + i), Instant.ofEpochMilli(BASE + i)));
            if (ShardSelector.shardOf("order-" + i, 16) == broken) {
                expectedFailures.add(i);
            }
        }
        assertThat(expectedFailures).contains(3).hasSizeLessThan(64);

        ScheduleBatchException e =
                catchThrowableOfType(ScheduleBatchException.class, () -> producer.scheduleAll(batched, requests));

        assertThat(e.failures().keySet()).isEqualTo(expectedFailures);
        assertThat(e.failures().values()).allSatisfy(f -> assertThat(f).hasStackTraceContaining("WRONGTYPE"));
        assertThat(e)
                .hasMessageStartingWith(expectedFailures.size() + " of 64 schedules of business '" + batched
                        + "' failed, the other " + (64 - expectedFailures.size()) + " are scheduled; failed: #"
                        + expectedFailures.iterator().next() + ": ")
                .hasCauseInstanceOf(RuntimeException.class);
        long[] due = e.dueTimes();
        for (int i = 0; i < 64; i++) {
            assertThat(due[i]).as("due time of #%d", i).isEqualTo(expectedFailures.contains(i) ? -1 : BASE + i);
        }
        long scheduled = 0;
        for (int shard = 0; shard < 16; shard++) {
            if (shard != broken) {
                scheduled += zset(keys.shard(shard)).size();
            }
        }
        assertThat(scheduled).isEqualTo(64 - expectedFailures.size());
        assertThat(hash(keys.payloads(broken)))
                .as("a refused schedule wrote nothing")
                .isEmpty();
    }

    @Test
    void aBatchAfterRedisForgotItsScriptsIsStillScheduled() {
        producer.schedule(batched, "before the flush", Instant.ofEpochMilli(BASE));
        try (RedisConnection c = factory.getConnection()) {
            c.scriptingCommands().scriptFlush();
        }
        List<ScheduleRequest> requests = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            requests.add(ScheduleRequest.message(b("after the flush " + i), Instant.ofEpochMilli(BASE + i)));
        }
        assertThat(producer.scheduleAll(batched, requests)).hasSize(50).doesNotContain(-1L);
        assertThat(producer.count(batched)).isEqualTo(51);
    }

    @Test
    void aBatchRemovesCopiesLeftUnderAnEarlierShardCount() {
        producer.scheduleById(batched, "order-1001", "old", Instant.ofEpochMilli(BASE));
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(batched);
        try (RedisConnection c = factory.getConnection()) {
            c.hashCommands().hSet(b(keys.meta()), b(MetaFields.SHARDS), b("7"));
            c.hashCommands().hSet(b(keys.meta()), b(MetaFields.HISTORY), b("16"));
        }
        RedisDelayedMessageProducer fresh =
                new RedisDelayedMessageProducer(factory, 16, Duration.ZERO, DelayQueueKeys::forBusiness);
        assertThat(ShardSelector.shardOf("order-1001", 16)).isEqualTo(9);
        int now = ShardSelector.shardOf("order-1001", 7);
        assertThat(now).isNotEqualTo(9);

        long[] due = fresh.scheduleAll(
                batched,
                List.of(
                        ScheduleRequest.byId("order-1001", b("new"), Instant.ofEpochMilli(BASE + 5)),
                        ScheduleRequest.byId("order-1002", b("other"), Instant.ofEpochMilli(BASE + 6))));

        assertThat(due).containsExactly(BASE + 5, BASE + 6);
        assertThat(zset(keys.shard(9))).as("the copy under 16 shards is gone").doesNotContainKey("order-1001");
        assertThat(zset(keys.shard(now))).containsEntry("order-1001", (double) (BASE + 5));
        assertThat(hash(keys.payloads(now))).containsEntry("order-1001", "new");
        assertThat(fresh.count(batched)).isEqualTo(2);
    }

    @Test
    void badRequestsAreRefusedBeforeAnythingIsSentNamingTheValue() {
        List<ScheduleRequest> withNull = new ArrayList<>(List.of(
                ScheduleRequest.message(b("a"), Instant.ofEpochMilli(BASE)),
                ScheduleRequest.message(b("b"), Instant.ofEpochMilli(BASE))));
        withNull.add(null);
        assertThatThrownBy(() -> producer.scheduleAll(batched, withNull))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("request #2 of the batch is null");
        assertThat(producer.count(batched)).as("nothing sent").isZero();
        assertThat(producer.scheduleAll(batched, List.of())).isEmpty();
        assertThatThrownBy(() -> ScheduleRequest.byId("", b("x"), Instant.ofEpochMilli(BASE)))
                .hasMessage("id must not be empty, was ''");
        assertThatThrownBy(() -> ScheduleRequest.messageAfter(b("x"), Duration.ofMillis(-5)))
                .hasMessage("delay must be zero or positive, was PT-0.005S");
        assertThatThrownBy(() -> ScheduleRequest.message(b("x"), Instant.ofEpochMilli(BASE))
                        .withOptions(ScheduleOptions.create()))
                .hasMessageContaining("per-message options need a schedule by id");
        assertThatThrownBy(() -> ScheduleRequest.message(null, Instant.ofEpochMilli(BASE)))
                .hasMessage("message");
    }

    @Test
    void theDefaultSendsOneByOneAndCollectsWhatFailed() {
        List<String> sent = new ArrayList<>();
        DelayedMessageProducer oneByOne = new OneByOne(sent);
        List<ScheduleRequest> requests = List.of(
                ScheduleRequest.message(b("first"), Instant.ofEpochMilli(BASE)),
                ScheduleRequest.byId("fails", b("x"), Instant.ofEpochMilli(BASE + 1)),
                ScheduleRequest.byIdAfter("third", b("y"), Duration.ofSeconds(3)));
        ScheduleBatchException e =
                catchThrowableOfType(ScheduleBatchException.class, () -> oneByOne.scheduleAll("b", requests));
        assertThat(sent).containsExactly("schedule first", "scheduleById fails", "scheduleByIdAfter third PT3S");
        assertThat(e.dueTimes()).containsExactly(BASE, -1, 3_000);
        assertThat(e.failures()).containsOnlyKeys(1);
        assertThat(e)
                .hasMessage("1 of 3 schedules of business 'b' failed, the other 2 are scheduled; failed: "
                        + "#1: refused fails");
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private long redisTime() {
        try (RedisConnection c = factory.getConnection()) {
            return c.serverCommands().time(TimeUnit.MILLISECONDS);
        }
    }

    private Map<String, Double> zset(String key) {
        Map<String, Double> out = new TreeMap<>();
        try (RedisConnection c = factory.getConnection()) {
            if (!"zset".equals(c.keyCommands().type(b(key)).code())) {
                return out;
            }
            for (Tuple t : c.zSetCommands().zRangeWithScores(b(key), 0, -1)) {
                out.put(new String(t.getValue(), StandardCharsets.UTF_8), t.getScore());
            }
        }
        return out;
    }

    /** A hash's fields and values (values as ISO-8859-1, so every byte compares). */
    private Map<String, String> hash(String key) {
        Map<String, String> out = new TreeMap<>();
        try (RedisConnection c = factory.getConnection()) {
            Map<byte[], byte[]> all = c.hashCommands().hGetAll(b(key));
            if (all != null) {
                all.forEach((k, v) ->
                        out.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.ISO_8859_1)));
            }
        }
        return out;
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Records what the interface's default batch calls; refuses the id "fails". */
    private record OneByOne(List<String> sent) implements DelayedMessageProducer {
        @Override
        public long schedule(String business, byte[] message, Instant dueAt) {
            sent.add("schedule " + new String(message, StandardCharsets.UTF_8));
            return dueAt.toEpochMilli();
        }

        @Override
        public long scheduleAfter(String business, byte[] message, Duration delay) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long scheduleById(String business, String id, byte[] message, Instant dueAt) {
            sent.add("scheduleById " + id);
            if (id.equals("fails")) {
                throw new IllegalStateException("refused " + id);
            }
            return dueAt.toEpochMilli();
        }

        @Override
        public long scheduleByIdAfter(String business, String id, byte[] message, Duration delay) {
            sent.add("scheduleByIdAfter " + id + " " + delay);
            return delay.toMillis();
        }

        @Override
        public boolean cancel(String business, byte[] message) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean cancelById(String business, String id) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean reschedule(String business, byte[] message, Instant dueAt) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean rescheduleById(String business, String id, Instant dueAt) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long count(String business) {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<ScheduledEntry> peek(String business, int limit) {
            throw new UnsupportedOperationException();
        }
    }

    /**
     * A TCP proxy to the test Redis that holds every chunk of bytes from the client for a fixed time before passing
     * it on (the replies pass at once): each round trip takes at least that long, however many commands it carries.
     */
    private static final class DelayingProxy implements AutoCloseable {
        private final ServerSocket server = new ServerSocket();
        private final ScheduledExecutorService delayer = Executors.newSingleThreadScheduledExecutor();
        private final List<Socket> sockets = new ArrayList<>();
        private final long delayMs;

        DelayingProxy(long delayMs) throws IOException {
            this.delayMs = delayMs;
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            Thread accept = new Thread(this::accept, "delaying-proxy");
            accept.setDaemon(true);
            accept.start();
        }

        int port() {
            return server.getLocalPort();
        }

        private void accept() {
            try {
                while (true) {
                    Socket client = server.accept();
                    Socket redis = new Socket(
                            System.getenv().getOrDefault("REDIS_HOST", "127.0.0.1"),
                            Integer.parseInt(System.getenv().getOrDefault("REDIS_PORT", "6379")));
                    synchronized (sockets) {
                        sockets.addAll(List.of(client, redis));
                    }
                    pump(client.getInputStream(), redis.getOutputStream(), true);
                    pump(redis.getInputStream(), client.getOutputStream(), false);
                }
            } catch (IOException closed) {
                // the proxy was closed
            }
        }

        private void pump(InputStream in, OutputStream out, boolean delayed) {
            Thread t = new Thread(() -> {
                byte[] buffer = new byte[65536];
                try {
                    int n;
                    while ((n = in.read(buffer)) > 0) {
                        byte[] chunk = Arrays.copyOf(buffer, n);
                        if (delayed) {
                            // one scheduler thread, same delay: chunks keep their order
                            delayer.schedule(() -> write(out, chunk), delayMs, TimeUnit.MILLISECONDS);
                        } else {
                            write(out, chunk);
                        }
                    }
                } catch (IOException closed) {
                    // a side closed
                }
            });
            t.setDaemon(true);
            t.start();
        }

        private static void write(OutputStream out, byte[] chunk) {
            try {
                out.write(chunk);
                out.flush();
            } catch (IOException closed) {
                // a side closed
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            delayer.shutdownNow();
            synchronized (sockets) {
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }
}
