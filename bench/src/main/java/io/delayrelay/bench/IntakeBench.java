package io.delayrelay.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RelayHeaders;

/**
 * The AMQP intake (docs/amqp-intake.md) through the relay's exec jar, as x-delay publishers use it:
 * throughput from an intake publish to the consumer (100 B persistent messages, confirms on both sides) against
 * PerfTest's plain publish and consume in the same run; lag at a steady 1,000 msg/s; Redis bytes per waiting entry,
 * hot and once cold (a business with {@code cold-after: 10s}).
 */
final class IntakeBench {

    static final int THROUGHPUT_MESSAGES = 50_000;
    /** Warm-up rounds before the measured messages: until a round compiles less than {@link #JIT_IDLE_MS}. */
    static final int WARM_UP_ROUNDS = 10;

    static final int WARM_UP_MESSAGES = 20_000;
    static final long JIT_IDLE_MS = 300;
    static final int LAG_RATE = 1_000;
    static final int LAG_SECONDS = 30;
    static final int MEMORY_ENTRIES = 20_000;
    static final int BODY_BYTES = 100;
    /** Shards of the cold measurement's business. */
    static final int COLD_SHARDS = 16;

    /** The figures of one run. */
    record Result(
            int n,
            double intakeRate,
            double perfTestRate,
            int lagN,
            int lagReceived,
            long[] lagMs,
            long[] publishLagMs,
            long early,
            double bytesPerEntry,
            double bytesPerColdEntry,
            double bytesPerJsonEntry,
            double bytesPerColdJsonEntry,
            String loadAverage) {}

    private final Infra infra;
    private final Path relayJar;
    private final Path logs;
    private final Path perfTestClasspath;

    IntakeBench(Infra infra, Path relayJar, Path logs, Path perfTestClasspath) {
        this.infra = infra;
        this.relayJar = relayJar;
        this.logs = logs;
        this.perfTestClasspath = perfTestClasspath;
    }

    static double estimateSeconds() {
        return 30 + 20 + 20 + LAG_SECONDS + 15 + 20 + 30 + 60;
    }

    Result run() throws Exception {
        if (relayJar == null || !Files.isRegularFile(relayJar)) {
            throw new IllegalStateException("no relay exec jar: " + relayJar + " (bench.sh builds and passes it)");
        }
        Files.createDirectories(logs);
        String intake = infra.name("intake");
        String memory = infra.name("intake-mem");
        String cold = infra.name("intake-cold");
        String memoryJson = infra.name("intake-mem-json");
        String coldJson = infra.name("intake-cold-json");
        String in = intake + "-in";
        String memIn = memory + "-in";
        String coldIn = cold + "-in";
        String out = intake + "-out";
        String queue = intake + "-q";
        Channel admin = infra.channel();
        admin.exchangeDeclare(out, "topic", false, true, null);
        admin.queueDeclare(queue, true, false, true, null);
        admin.queueBind(queue, out, "#");
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("relay.intakes." + intake + ".exchange", in);
        p.put("relay.intakes." + intake + ".deliver-to", out);
        // the memory measurements run in a second relay, started after the lag scenario: their four businesses (two
        // with a cold mover) would share the two cores with the measured one
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("relay.intakes." + memory + ".exchange", memIn);
        m.put("relay.intakes." + memory + ".deliver-to", out);
        // the same entries into a business with a cold tier: demoted once due more than 10 s ahead (docs/cold-tier.md)
        m.put("relay.intakes." + cold + ".exchange", coldIn);
        m.put("relay.intakes." + cold + ".deliver-to", out);
        m.put("relay.businesses." + cold + ".shards", COLD_SHARDS);
        m.put("relay.businesses." + cold + ".cold-after", "10s");
        // the same two measurements with JSON bodies that differ per message (the 'x' bodies compress to nothing)
        m.put("relay.intakes." + memoryJson + ".exchange", memoryJson + "-in");
        m.put("relay.intakes." + memoryJson + ".deliver-to", out);
        m.put("relay.intakes." + coldJson + ".exchange", coldJson + "-in");
        m.put("relay.intakes." + coldJson + ".deliver-to", out);
        m.put("relay.businesses." + coldJson + ".shards", COLD_SHARDS);
        m.put("relay.businesses." + coldJson + ".cold-after", "10s");
        Path log = logs.resolve("intake-relay.log");
        Process relay = Storm.startRelayJar(infra, relayJar, p, log);
        Process memoryRelay = null;
        Connection connection = infra.amqpFactory().newConnection("relay-bench-intake");
        // the consumer on a connection of its own, as PerfTest does: RabbitMQ's flow control stops reading a publishing
        // connection, and with it the acks of a consumer on that connection (deliveries stop at the prefetch)
        Connection consuming = infra.amqpFactory().newConnection("relay-bench-intake-consumer");
        try {
            LagProcesses.awaitLogLine(relay, log, "consuming 'delay-relay.intake." + intake + "'", 120);
            double perfTest = perfTestRate();
            Channel consumer = consuming.createChannel();
            consumer.basicQos(500);
            AtomicInteger received = new AtomicInteger();
            AtomicLong lastReceived = new AtomicLong();
            long[] lag = new long[LAG_RATE * LAG_SECONDS];
            // the relay's own part: x-delay-relayed-at - due (the rest is the broker's hop to the consumer)
            long[] publishLag = new long[LAG_RATE * LAG_SECONDS];
            AtomicInteger lagged = new AtomicInteger();
            AtomicLong early = new AtomicLong();
            consumer.basicConsume(queue, false, new DefaultConsumer(consumer) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                        throws java.io.IOException {
                    long now = System.currentTimeMillis();
                    if (props.getType() != null && props.getType().equals("lag")) {
                        long due = ((Number) props.getHeaders().get(RelayHeaders.DUE_AT)).longValue();
                        int i = lagged.getAndIncrement();
                        if (i < lag.length) {
                            lag[i] = now - due;
                            publishLag[i] =
                                    ((Number) props.getHeaders().get(RelayHeaders.RELAYED_AT)).longValue() - due;
                        }
                        if (now < due) {
                            early.incrementAndGet();
                        }
                    } else {
                        received.incrementAndGet();
                        lastReceived.set(now);
                    }
                    getChannel().basicAck(envelope.getDeliveryTag(), false);
                }
            });

            Channel publisher = connection.createChannel();
            publisher.confirmSelect();
            byte[] body = new byte[BODY_BYTES];
            Arrays.fill(body, (byte) 'x');
            // unreported warm-up rounds, as the other scenarios' warm-up drains: the relay's JIT compiles its intake
            // path during its first messages (14 s of compiling inside the first 50,000 in one run on 2 cores), a
            // cost a running relay pays once at start, not per message
            int sentSoFar = 0;
            for (int round = 1; round <= WARM_UP_ROUNDS; round++) {
                long jitBefore = compileMillis(relay.pid());
                long t = System.currentTimeMillis();
                sentSoFar =
                        publishThrough(publisher, in, body, "w" + round + "-", WARM_UP_MESSAGES, received, sentSoFar);
                long jit = compileMillis(relay.pid()) - jitBefore;
                Scenarios.log(
                        "intake warm-up %d: %,d messages in %,d ms, the relay compiled for %,d ms",
                        round, WARM_UP_MESSAGES, System.currentTimeMillis() - t, jit);
                if (jit < JIT_IDLE_MS) {
                    break;
                }
            }
            Scenarios.log(
                    "intake: %,d messages of %d B, x-delay 0, publisher confirms", THROUGHPUT_MESSAGES, BODY_BYTES);
            long jitBefore = compileMillis(relay.pid());
            long start = System.currentTimeMillis();
            publishThrough(publisher, in, body, "t-", THROUGHPUT_MESSAGES, received, sentSoFar);
            double rate = THROUGHPUT_MESSAGES * 1000.0 / Math.max(1, lastReceived.get() - start);
            Scenarios.log(
                    "intake: %,.0f msg/s; the relay compiled for %,d ms meanwhile",
                    rate, compileMillis(relay.pid()) - jitBefore);

            Scenarios.log("intake lag: %,d msg/s for %d s, x-delay 1-5 s", LAG_RATE, LAG_SECONDS);
            int n = LAG_RATE * LAG_SECONDS;
            long jitBeforeLag = compileMillis(relay.pid());
            long t0 = System.nanoTime();
            java.util.Random random = new java.util.Random(41);
            for (int i = 0; i < n; i++) {
                long at = t0 + i * 1_000_000_000L / LAG_RATE;
                long wait = at - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                publisher.basicPublish(in, "k", properties("l-" + i, 1_000 + random.nextInt(4_000), "lag"), body);
                if (i % 100 == 99) {
                    publisher.waitForConfirmsOrDie(30_000);
                }
            }
            publisher.waitForConfirmsOrDie(30_000);
            waitFor(() -> lagged.get() >= n, 30_000);
            int got = Math.min(lagged.get(), n);
            long[] sorted = Arrays.copyOf(lag, got);
            Arrays.sort(sorted);
            long[] published = Arrays.copyOf(publishLag, got);
            Arrays.sort(published);
            Scenarios.log(
                    "intake lag: p99 %d ms; the relay compiled for %,d ms meanwhile",
                    pct(sorted, 0.99), compileMillis(relay.pid()) - jitBeforeLag);
            relay.destroy();
            relay.waitFor();

            Path memoryLog = logs.resolve("intake-memory-relay.log");
            memoryRelay = Storm.startRelayJar(infra, relayJar, m, memoryLog);
            for (String name : List.of(memory, cold, memoryJson, coldJson)) {
                LagProcesses.awaitLogLine(memoryRelay, memoryLog, "consuming 'delay-relay.intake." + name + "'", 120);
            }

            Scenarios.log("intake memory: %,d entries of %d B with 3 headers, x-delay 1 h", MEMORY_ENTRIES, BODY_BYTES);
            double bytes = hotBytes(publisher, memory, i -> body);
            double coldBytes = coldBytes(publisher, cold, i -> body);
            Scenarios.log("intake memory: the same with JSON bodies that differ per message");
            java.util.Random json = new java.util.Random(42);
            byte[][] bodies = new byte[MEMORY_ENTRIES][];
            for (int i = 0; i < MEMORY_ENTRIES; i++) {
                bodies[i] = jsonBody(i, json);
            }
            double jsonBytes = hotBytes(publisher, memoryJson, i -> bodies[i]);
            double coldJsonBytes = coldBytes(publisher, coldJson, i -> bodies[i]);
            return new Result(
                    THROUGHPUT_MESSAGES,
                    rate,
                    perfTest,
                    n,
                    got,
                    new long[] {pct(sorted, 0.5), pct(sorted, 0.99), sorted.length == 0 ? -1 : sorted[sorted.length - 1]
                    },
                    new long[] {
                        pct(published, 0.5), pct(published, 0.99), got == 0 ? -1 : published[published.length - 1]
                    },
                    early.get(),
                    bytes,
                    coldBytes,
                    jsonBytes,
                    coldJsonBytes,
                    Storm.loadAverage());
        } finally {
            consuming.close();
            connection.close();
            for (Process process : new Process[] {relay, memoryRelay}) {
                if (process != null) {
                    process.destroy();
                    process.waitFor();
                }
            }
            for (String q : List.of(
                    queue,
                    "delay-relay.intake." + intake,
                    "delay-relay.intake." + memory,
                    "delay-relay.intake." + cold,
                    "delay-relay.intake." + memoryJson,
                    "delay-relay.intake." + coldJson)) {
                admin.queueDelete(q);
            }
            for (String x : List.of(in, memIn, coldIn, memoryJson + "-in", coldJson + "-in", out)) {
                admin.exchangeDelete(x);
            }
        }
    }

    /** Redis bytes per entry once {@link #MEMORY_ENTRIES} entries wait in intake {@code name}'s business (hot). */
    private double hotBytes(Channel publisher, String name, java.util.function.IntFunction<byte[]> body)
            throws Exception {
        long before = infra.stats().usedMemory();
        publishMemoryEntries(publisher, name + "-in", body);
        waitFor(() -> depth("delay-relay.intake." + name) == 0, 60_000);
        Thread.sleep(1_000);
        return (infra.stats().usedMemory() - before) / (double) MEMORY_ENTRIES;
    }

    /** The same into intake {@code name}'s business with cold-after 10 s, once its shards hold no hot entry. */
    private double coldBytes(Channel publisher, String name, java.util.function.IntFunction<byte[]> body)
            throws Exception {
        Scenarios.log("intake memory once cold: %,d entries into a business with cold-after 10 s", MEMORY_ENTRIES);
        long before = infra.stats().usedMemory();
        publishMemoryEntries(publisher, name + "-in", body);
        waitFor(() -> depth("delay-relay.intake." + name) == 0, 60_000);
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(name);
        long deadline = System.currentTimeMillis() + 90_000;
        while (hotEntries(keys) > 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        Thread.sleep(1_000);
        double bytes = (infra.stats().usedMemory() - before) / (double) MEMORY_ENTRIES;
        Scenarios.log(
                "intake memory once cold: %.0f B an entry, %,d of %,d still hot",
                bytes, hotEntries(keys), MEMORY_ENTRIES);
        return bytes;
    }

    /**
     * An order event of exactly {@link #BODY_BYTES} bytes of JSON whose values differ per message (ids, amounts,
     * times, a random reference), as a real publisher's bodies do.
     */
    static byte[] jsonBody(int i, java.util.Random random) {
        String head = String.format(
                Locale.ROOT,
                "{\"order\":%d,\"customer\":\"c-%07d\",\"amount\":\"%d.%02d\",\"items\":%d,\"at\":%d,\"ref\":\"",
                100_000 + i,
                random.nextInt(10_000_000),
                random.nextInt(2_000),
                random.nextInt(100),
                1 + random.nextInt(9),
                1_764_480_000_000L + random.nextInt(86_400_000));
        StringBuilder text = new StringBuilder(head);
        while (text.length() < BODY_BYTES - 2) {
            text.append(Character.forDigit(random.nextInt(16), 16));
        }
        text.append("\"}");
        return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** The memory scenario's entries: 100 B bodies with three headers and a message id, x-delay 1 h. */
    private static void publishMemoryEntries(
            Channel publisher, String exchange, java.util.function.IntFunction<byte[]> bodies) throws Exception {
        for (int i = 0; i < MEMORY_ENTRIES; i++) {
            Map<String, Object> headers = new LinkedHashMap<>();
            headers.put("x-delay", 3_600_000);
            headers.put("tenant", "acme");
            headers.put("order", 100_000 + i);
            headers.put("source", "checkout");
            publisher.basicPublish(
                    exchange,
                    "orders.created",
                    new AMQP.BasicProperties.Builder()
                            .messageId(String.format(Locale.ROOT, "order-%08d", i))
                            .contentType("application/json")
                            .deliveryMode(2)
                            .headers(headers)
                            .build(),
                    bodies.apply(i));
            if (i % 1_000 == 999) {
                publisher.waitForConfirmsOrDie(30_000);
            }
        }
        publisher.waitForConfirmsOrDie(30_000);
    }

    /** Entries still in the business's hot shards (ZCARD of each). */
    private long hotEntries(DelayQueueKeys keys) {
        long n = 0;
        for (int i = 0; i < COLD_SHARDS; i++) {
            n += infra.redis().zcard(keys.shard(i).getBytes(StandardCharsets.UTF_8));
        }
        return n;
    }

    /**
     * Publishes {@code count} messages with x-delay 0 to the intake exchange (confirms every 1,000) and waits until the
     * consumer counted them all; returns the consumer's count to wait for next time.
     */
    private static int publishThrough(
            Channel publisher,
            String exchange,
            byte[] body,
            String idPrefix,
            int count,
            AtomicInteger received,
            int receivedBefore)
            throws Exception {
        for (int i = 0; i < count; i++) {
            publisher.basicPublish(exchange, "k", properties(idPrefix + i, 0, null), body);
            if (i % 1_000 == 999) {
                publisher.waitForConfirmsOrDie(30_000);
            }
        }
        publisher.waitForConfirmsOrDie(30_000);
        int expected = receivedBefore + count;
        waitFor(() -> received.get() >= expected, 120_000);
        return expected;
    }

    /**
     * The JIT compile time (ms) of a JVM so far: its {@code java.ci.totalTime} performance counter, read with
     * {@code jcmd <pid> PerfCounter.print} (the relay is a process of its own).
     */
    static long compileMillis(long pid) throws Exception {
        Process jcmd = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                        Long.toString(pid),
                        "PerfCounter.print")
                .redirectErrorStream(true)
                .start();
        String out = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        jcmd.waitFor();
        Matcher ticks = Pattern.compile("java\\.ci\\.totalTime=(\\d+)").matcher(out);
        Matcher hz = Pattern.compile("sun\\.os\\.hrt\\.frequency=(\\d+)").matcher(out);
        if (!ticks.find() || !hz.find()) {
            throw new IllegalStateException("jcmd " + pid + " PerfCounter.print: no JIT time in " + out);
        }
        return Long.parseLong(ticks.group(1)) * 1000 / Long.parseLong(hz.group(1));
    }

    private long depth(String queue) {
        try {
            return infra.depth(queue);
        } catch (Exception e) {
            return -1;
        }
    }

    private static AMQP.BasicProperties properties(String id, int delay, String type) {
        return new AMQP.BasicProperties.Builder()
                .messageId(id)
                .deliveryMode(2)
                .type(type)
                .headers(Map.of("x-delay", delay))
                .build();
    }

    private interface Condition {
        boolean met() throws Exception;
    }

    private static void waitFor(Condition condition, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.met()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("intake bench: not done within " + timeoutMs + " ms");
            }
            Thread.sleep(20);
        }
    }

    private static long pct(long[] sorted, double p) {
        return sorted.length == 0 ? -1 : sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
    }

    /** PerfTest publishing and consuming the same count of 100 B persistent messages with confirms: its receive rate. */
    private double perfTestRate() throws Exception {
        if (perfTestClasspath == null) {
            return -1;
        }
        String queue = infra.name("intake-perftest");
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m",
                "-cp",
                Files.readString(perfTestClasspath).trim(),
                "com.rabbitmq.perf.PerfTest",
                "--uri",
                "amqp://guest:guest@" + infra.config.rabbitHost() + ":" + infra.config.rabbitPort(),
                "--producers",
                "1",
                "--consumers",
                "1",
                "--pmessages",
                Integer.toString(THROUGHPUT_MESSAGES),
                "--cmessages",
                Integer.toString(THROUGHPUT_MESSAGES),
                "--size",
                Integer.toString(BODY_BYTES),
                "--flag",
                "persistent",
                "--confirm",
                "1000",
                "--queue",
                queue,
                "--auto-delete",
                "true"));
        Scenarios.log("intake: PerfTest publish + consume, %,d messages", THROUGHPUT_MESSAGES);
        Process perf = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output;
        try (BufferedReader r =
                new BufferedReader(new InputStreamReader(perf.getInputStream(), StandardCharsets.UTF_8))) {
            output = String.join("\n", r.lines().toList());
        }
        perf.waitFor();
        Matcher m = Pattern.compile("receiving rate avg: ([0-9]+)").matcher(output);
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    static void render(StringBuilder b, Result r) {
        if (r == null) {
            return;
        }
        b.append("## 8. AMQP intake\n\n");
        b.append(String.format(
                Locale.ROOT,
                "The relay's exec jar with one intake for throughput and lag, then a second exec jar with four for"
                        + " the bytes (hot and into a business with cold-after 10 s, each with 'x' bodies and with JSON"
                        + " bodies that differ per message; 20,000 entries each, the first 200 of a business stored as"
                        + " they are while its compression dictionary is trained, included); the harness publishes to the intake exchange with confirms and"
                        + " consumes deliver-to with manual acks; before the measured messages, unreported warm-up rounds of"
                        + " 20,000 (at most 10) until the relay's JIT compiles less than 300 ms in one (read with jcmd). PerfTest: one"
                        + " producer and one consumer, the same count of persistent %d B messages, confirms. Load average"
                        + " after: %s.%n%n",
                BODY_BYTES,
                r.loadAverage()));
        b.append("| figure | measured | target |\n|---|---:|---:|\n");
        b.append(String.format(
                Locale.ROOT,
                "| intake → delivered, %,d messages, msg/s | %,.0f | |%n| PerfTest publish + consume, msg/s | %,.0f | |%n",
                r.n(),
                r.intakeRate(),
                r.perfTestRate()));
        b.append(String.format(
                Locale.ROOT, "| intake / PerfTest | **%.2f** | ≥ 0.45 |%n", r.intakeRate() / r.perfTestRate()));
        b.append(String.format(
                Locale.ROOT,
                "| lag at %,d msg/s (due → received) p50 / p99 / max, ms | %d / **%d** / %d | p99 ≤ 30 |%n",
                LAG_RATE,
                r.lagMs()[0],
                r.lagMs()[1],
                r.lagMs()[2]));
        b.append(String.format(
                Locale.ROOT,
                "| of which the relay's: due → published (`x-delay-relayed-at`) p50 / p99 / max, ms | %d / %d / %d | |%n",
                r.publishLagMs()[0],
                r.publishLagMs()[1],
                r.publishLagMs()[2]));
        b.append(String.format(
                Locale.ROOT,
                "| received / sent at %,d msg/s (early) | %,d / %,d (%d) | all, none early |%n",
                LAG_RATE,
                r.lagReceived(),
                r.lagN(),
                r.early()));
        b.append(String.format(
                Locale.ROOT,
                "| Redis bytes per waiting entry (%d B body, 3 headers, message id) | **%.0f** | ≤ 260 |%n",
                BODY_BYTES,
                r.bytesPerEntry()));
        b.append(String.format(
                Locale.ROOT,
                "| the same once cold (a business with `cold-after: 10s`) | **%.0f** | ≤ 60 |%n",
                r.bytesPerColdEntry()));
        b.append(String.format(
                Locale.ROOT,
                "| the same, JSON bodies that differ per message (ids, amounts, times, a random reference) | **%.0f** | ≤ 260 |%n",
                r.bytesPerJsonEntry()));
        b.append(String.format(
                Locale.ROOT, "| the same once cold, JSON bodies | **%.0f** | ≤ 60 |%n%n", r.bytesPerColdJsonEntry()));
    }
}
