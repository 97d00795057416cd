package io.delayrelay.bench;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ScheduleRequest;
import io.delayrelay.api.ShardSelector;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The producer and the consumer of the lag scenario, each run by the harness in its own JVM (the relay runs as its
 * exec jar in a third), so that none of them stalls the others:
 *
 * <pre>
 * LagProcess producer REDIS_HOST REDIS_PORT BUSINESS SHARDS RATE SECONDS api|batch|zadd MESSAGE_BYTES [WARM_SECONDS]
 *   paces RATE msg/s, with the relay-api producer (batch: its scheduleAll, each sending thread's messages of the
 *   last BATCH_LINGER_MS in one call) or a bare ZADD into the shard: first a warm-up (WARM_SECONDS,
 *   default a few seconds, due 1-5 s ahead as the measured messages; prints "warm N"), then SECONDS due 1-5 s ahead (System.currentTimeMillis); prints
 *   "sent N achieved R lastDue T errors E" when done.
 * LagProcess consumer RABBIT_HOST RABBIT_PORT QUEUE OUT_FILE
 *   consumes QUEUE (auto-ack), prints "ready" once subscribed, and on end of stdin writes one line per message to
 *   OUT_FILE: received-ms due-ms relayed-at-ms (-1 if absent) message-id ("warm-up" for warm-up messages); then
 *   prints "received N". Prints "count N" (messages so far) every 100 ms.
 * </pre>
 */
public final class LagProcess {

    private LagProcess() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: LagProcess producer|consumer ...");
        }
        switch (args[0]) {
            case "producer" -> produce(
                    args[1],
                    Integer.parseInt(args[2]),
                    args[3],
                    Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]),
                    Integer.parseInt(args[6]),
                    args[7],
                    Integer.parseInt(args[8]),
                    args.length > 9 ? Integer.parseInt(args[9]) : -1);
            case "consumer" -> consume(args[1], Integer.parseInt(args[2]), args[3], Path.of(args[4]));
            default -> throw new IllegalArgumentException("unknown mode: " + args[0] + " (producer, consumer)");
        }
        System.exit(0);
    }

    // ------------------------------------------------------------------------------------------------ producer

    /** Sequence numbers of warm-up messages start here (the 10-digit seq field of {@link Messages}). */
    static final long WARM_UP_SEQ = 9_000_000_000L;

    private static void produce(
            String host,
            int port,
            String business,
            int shards,
            int rate,
            int seconds,
            String mode,
            int size,
            int warmSeconds)
            throws Exception {
        LettuceConnectionFactory factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration(host, port));
        factory.afterPropertiesSet();
        factory.start();
        RedisDelayedMessageProducer producer = RedisDelayedMessageProducer.withDefaultKeys(factory);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        Sender send =
                switch (mode) {
                    case "zadd" -> (body, due) -> {
                        int shard = ShardSelector.shardOf(body, shards);
                        try (RedisConnection c = factory.getConnection()) {
                            c.zSetCommands().zAdd(keys.shard(shard).getBytes(StandardCharsets.UTF_8), due, body);
                        }
                    };
                    case "api" -> (body, due) -> producer.schedule(business, body, Instant.ofEpochMilli(due));
                    case "batch" -> new BatchSender(producer, business);
                    default -> throw new IllegalArgumentException("producer mode " + mode + " (api, batch, zadd)");
                };
        // Warm-up (not measured): a fresh relay, producer and consumer JVM each compile their hot paths first. The
        // same rate and the same due times as the measured phase (1-5 s ahead): a warm-up of another shape (due at
        // once) left the relay's pop-ahead path to the JIT compiler inside the measured phase. Its last entries fall
        // due while the harness waits for the compilers to go idle and in the measured phase's first seconds, when
        // nothing measured is due yet; the harness leaves them out of every figure.
        int warmUpSeconds = warmSeconds > 0 ? warmSeconds : Math.min(3, Math.max(1, seconds / 5));
        Paced warm = pace(rate, rate * warmUpSeconds, WARM_UP_SEQ, 1_000, 4_000, size, send);
        System.out.printf("warm %d%n", warm.sent.get());
        System.out.flush();
        // The harness answers "go" once every JVM of the run has stopped compiling (or at once, if it closes stdin).
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
        long cpu0 = Scenarios.processCpuNanos();
        Paced run = pace(rate, rate * seconds, 0, 1_000, 4_000, size, send);
        long cpu = Scenarios.processCpuNanos() - cpu0;
        factory.destroy();
        System.out.printf(
                "sent %d achieved %.1f lastDue %d errors %d cpuNanos %d%n",
                run.sent.get(), run.achieved, run.lastDue.get(), warm.errors.get() + run.errors.get(), cpu);
        System.out.flush();
    }

    interface Sender {
        void send(byte[] body, long dueMs) throws Exception;

        /** Sends what the calling thread holds (at the end of its share). */
        default void flush() throws Exception {}
    }

    /** How long a sending thread of the batch producer holds its messages before one scheduleAll call. */
    static final long BATCH_LINGER_MS = 10;

    /**
     * The relay-api producer with batches: each sending thread collects its messages and sends them in one
     * {@code scheduleAll} call (one round trip) once the first of them is {@link #BATCH_LINGER_MS} old, as a service
     * that flushes an outbox every few milliseconds would.
     */
    static final class BatchSender implements Sender {
        private final RedisDelayedMessageProducer producer;
        private final String business;
        private final ThreadLocal<List<ScheduleRequest>> held = ThreadLocal.withInitial(ArrayList::new);
        private final ThreadLocal<long[]> firstAt = ThreadLocal.withInitial(() -> new long[1]);

        BatchSender(RedisDelayedMessageProducer producer, String business) {
            this.producer = producer;
            this.business = business;
        }

        @Override
        public void send(byte[] body, long dueMs) {
            List<ScheduleRequest> batch = held.get();
            long now = System.nanoTime();
            if (batch.isEmpty()) {
                firstAt.get()[0] = now;
            }
            batch.add(ScheduleRequest.message(body, Instant.ofEpochMilli(dueMs)));
            if (now - firstAt.get()[0] >= BATCH_LINGER_MS * 1_000_000L) {
                flush();
            }
        }

        @Override
        public void flush() {
            List<ScheduleRequest> batch = held.get();
            if (!batch.isEmpty()) {
                try {
                    producer.scheduleAll(business, batch);
                } finally {
                    batch.clear();
                }
            }
        }
    }

    record Paced(AtomicInteger sent, AtomicLong lastDue, AtomicLong errors, double achieved) {}

    /** Sends {@code count} messages at {@code rate} msg/s, due {@code aheadMs} + [0, spreadMs) ms after sending. */
    static Paced pace(int rate, int count, long seqBase, int aheadMs, int spreadMs, int size, Sender send)
            throws InterruptedException {
        int producers = Math.max(1, (int) Math.ceil(rate / 1_000.0));
        AtomicInteger sent = new AtomicInteger();
        AtomicLong lastDue = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        long start = System.nanoTime() + 50_000_000L;
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int share = count / producers + (p < count % producers ? 1 : 0);
            int index = p;
            Thread thread = new Thread(
                    () -> {
                        double periodNanos = 1e9 * producers / rate;
                        for (int k = 0; k < share; k++) {
                            long at = start + (long) (k * periodNanos) + (long) (index * periodNanos / producers);
                            long wait = at - System.nanoTime();
                            if (wait > 0) {
                                LockSupport.parkNanos(wait);
                            }
                            long due = System.currentTimeMillis()
                                    + aheadMs
                                    + ThreadLocalRandom.current().nextInt(spreadMs);
                            byte[] body = Messages.body(due, seqBase + (long) index * 100_000_000L + k, size);
                            try {
                                send.send(body, due);
                                sent.incrementAndGet();
                                lastDue.accumulateAndGet(due, Math::max);
                            } catch (Exception e) {
                                if (errors.incrementAndGet() == 1) {
                                    System.err.println("producer error: " + e);
                                }
                            }
                        }
                        try {
                            send.flush();
                        } catch (Exception e) {
                            if (errors.incrementAndGet() == 1) {
                                System.err.println("producer error: " + e);
                            }
                        }
                    },
                    "producer-" + p);
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        return new Paced(sent, lastDue, errors, sent.get() / ((System.nanoTime() - start) / 1e9));
    }

    // ------------------------------------------------------------------------------------------------ consumer

    private static void consume(String host, int port, String queue, Path out) throws Exception {
        ConnectionFactory cf = new ConnectionFactory();
        cf.setHost(host);
        cf.setPort(port);
        Records records = new Records();
        try (Connection connection = cf.newConnection("relay-bench-lag-consumer")) {
            Channel channel = connection.createChannel();
            channel.basicQos(2_000);
            channel.basicConsume(queue, true, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope env, AMQP.BasicProperties props, byte[] body) {
                    long now = System.currentTimeMillis();
                    Object dueHeader = props.getHeaders() == null
                            ? null
                            : props.getHeaders().get(RelayHeaders.DUE_AT);
                    Object relayed = props.getHeaders() == null
                            ? null
                            : props.getHeaders().get(RelayHeaders.RELAYED_AT);
                    records.add(
                            now,
                            dueHeader instanceof Number n ? n.longValue() : Messages.dueOf(body),
                            relayed instanceof Number n ? n.longValue() : -1,
                            Messages.seqOf(body) >= WARM_UP_SEQ,
                            props.getMessageId());
                }
            });
            System.out.println("ready");
            System.out.flush();
            // Progress for the harness, which closes stdin when it has seen enough (or gives up).
            Thread progress = new Thread(
                    () -> {
                        try {
                            while (true) {
                                Thread.sleep(100);
                                System.out.println("count " + records.size());
                                System.out.flush();
                            }
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    },
                    "progress");
            progress.setDaemon(true);
            progress.start();
            while (System.in.read() >= 0) {
                // wait for end of stdin
            }
            progress.interrupt();
            progress.join();
            channel.close(); // no delivery after this returns
        }
        int n = records.write(out);
        System.out.println("received " + n);
        System.out.flush();
    }

    /** Written instead of the message id for warm-up messages (the harness leaves them out). */
    static final String WARM_UP_ID = "warm-up";

    /** Appended by the single consumer thread; kept in memory and written at the end so no I/O delays receiving. */
    private static final class Records {
        private long[] values = new long[3 * 65_536];
        private String[] ids = new String[65_536];
        private int size;

        synchronized void add(long received, long due, long relayedAt, boolean warmUp, String id) {
            if (size == ids.length) {
                values = Arrays.copyOf(values, values.length * 2);
                ids = Arrays.copyOf(ids, ids.length * 2);
            }
            values[3 * size] = received;
            values[3 * size + 1] = due;
            values[3 * size + 2] = relayedAt;
            ids[size++] = warmUp ? WARM_UP_ID : id;
        }

        synchronized int size() {
            return size;
        }

        synchronized int write(Path out) throws IOException {
            try (BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
                for (int i = 0; i < size; i++) {
                    w.write(values[3 * i] + " " + values[3 * i + 1] + " " + values[3 * i + 2] + " " + ids[i]);
                    w.newLine();
                }
            }
            return size;
        }
    }
}
