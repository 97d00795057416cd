package io.delayrelay.soak;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The load and the independent judge of {@code scripts/soak.sh}: a producer, a consumer and a checker that share
 * nothing with the relay but the Redis contract (relay-api's producer, plain ZADD) and what arrives at the queue.
 *
 * <p>Why one file of about 700 lines: soak.sh compiles it once against the exec jar's own libraries, so the soak
 * needs no build module of its own; the three parts share only the journal formats below, which are easiest to
 * keep consistent when they sit side by side.
 *
 * <p>Journals (one record a line, space-separated; members and payloads never contain spaces):
 * <ul>
 *   <li>produced: {@code S member kind payload due t} (schedule; kind {@code p} by message, {@code i} by id),
 *       {@code R member due|-1 t} (reschedule, -1 when it was not scheduled), {@code C member 1|0 t} (cancel),
 *       {@code U member op t} (the write failed with an error: its outcome is unknown, the member is not judged);
 *       t is the host clock (ms) when Redis answered.</li>
 *   <li>delivered: {@code receivedMs redelivered messageId dueAt relayedAt attempt shard id|- body}.</li>
 * </ul>
 */
public final class SoakTool {

    private static final PrintStream OUT = System.out;

    private SoakTool() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> o = options(args);
        switch (args.length == 0 ? "" : args[0]) {
            case "produce" -> produce(o);
            case "consume" -> consume(o);
            case "check" -> System.exit(check(o));
            case "unbind" -> unbind(o);
            default -> {
                System.err.println("usage: SoakTool produce|consume|check --key value ... (see scripts/soak.sh)");
                System.exit(2);
            }
        }
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> o = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --key value, got '" + args[i] + "'");
            }
            o.put(args[i].substring(2), args[i + 1]);
        }
        return o;
    }

    private static String need(Map<String, String> o, String key) {
        String v = o.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Producer

    /**
     * Writes about {@code rate} operations a second until {@code stop-file} exists or {@code seconds} passed: half
     * plain ZADDs by message (no wake-up published: keyspace notifications or the sweep must find them), half by id
     * through relay-api's producer; among both, re-schedules (a new payload for an id), reschedules (a new due)
     * and cancels. Every due is 0.5-10 s ahead of Redis time.
     */
    private static void produce(Map<String, String> o) throws Exception {
        int port = Integer.parseInt(need(o, "redis-port"));
        String business = need(o, "business");
        int rate = Integer.parseInt(o.getOrDefault("rate", "200"));
        long seconds = Long.parseLong(o.getOrDefault("seconds", "60"));
        Path stopFile = Path.of(need(o, "stop-file"));
        Path journal = Path.of(need(o, "journal"));
        Random random = new Random(Long.parseLong(o.getOrDefault("seed", String.valueOf(System.nanoTime()))));
        String run = Long.toString(System.currentTimeMillis(), 36);

        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration("127.0.0.1", port),
                // longer than any Redis freeze of the soak: a write waits instead of failing with an unknown outcome
                LettuceClientConfiguration.builder()
                        .commandTimeout(Duration.ofSeconds(120))
                        .build());
        factory.afterPropertiesSet();
        factory.start();
        RedisDelayedMessageProducer producer =
                new RedisDelayedMessageProducer(factory, 16, Duration.ofSeconds(1), DelayQueueKeys::forBusiness);
        RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
        client.setDefaultTimeout(Duration.ofSeconds(120));
        StatefulRedisConnection<String, String> connection = client.connect();
        RedisCommands<String, String> redis = connection.sync();
        String k = "delayqueue:" + business;

        List<String> liveIds = new ArrayList<>();
        Map<String, Integer> versions = new HashMap<>();
        List<String> recentPlain = new ArrayList<>();
        long plainCount = 0;
        long idCount = 0;
        long ops = 0;
        int shards = 16;
        long shardsReadAt = 0;
        long end = System.currentTimeMillis() + seconds * 1000;
        long started = System.nanoTime();
        try (BufferedWriter out = Files.newBufferedWriter(journal, StandardCharsets.UTF_8)) {
            long lastFlush = System.currentTimeMillis();
            while (System.currentTimeMillis() < end && !Files.exists(stopFile)) {
                long behind = ops - (System.nanoTime() - started) * rate / 1_000_000_000L;
                if (behind > 0) {
                    Thread.sleep(Math.max(1, behind * 1000 / rate));
                    continue;
                }
                ops++;
                long now = System.currentTimeMillis();
                if (now - lastFlush > 500) {
                    out.flush();
                    lastFlush = now;
                }
                long delay = 500 + random.nextInt(9_500);
                int dice = random.nextInt(100);
                String member = null;
                String op = "?";
                try {
                    if (dice < 42) { // a new plain entry by message: ZADD, the way any program may write one
                        if (now - shardsReadAt > 1000) {
                            String m = redis.hget(k + ":meta", "shards");
                            shards = m == null ? 16 : Integer.parseInt(m);
                            shardsReadAt = now;
                        }
                        member = "p-" + run + "-" + (plainCount++);
                        op = "S";
                        List<String> time = redis.time();
                        long due = Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000 + delay;
                        redis.zadd(k + ":" + ShardSelector.shardOf(member, shards), due, member);
                        out.write("S " + member + " p " + member + " " + due + " " + System.currentTimeMillis() + "\n");
                        recentPlain.add(member);
                        if (recentPlain.size() > 2000) {
                            recentPlain.subList(0, 1000).clear();
                        }
                    } else if (dice < 47 && !recentPlain.isEmpty()) { // move a plain entry
                        member = recentPlain.get(random.nextInt(recentPlain.size()));
                        op = "R";
                        long due = redisNow(redis) + delay;
                        boolean moved = producer.reschedule(business, member, Instant.ofEpochMilli(due));
                        out.write("R " + member + " " + (moved ? due : -1) + " " + System.currentTimeMillis() + "\n");
                    } else if (dice < 50 && !recentPlain.isEmpty()) { // cancel a plain entry
                        member = recentPlain.get(random.nextInt(recentPlain.size()));
                        op = "C";
                        boolean cancelled = producer.cancel(business, member);
                        out.write("C " + member + " " + (cancelled ? 1 : 0) + " " + System.currentTimeMillis() + "\n");
                    } else if (dice < 78 || liveIds.isEmpty()) { // a new id
                        member = "i-" + run + "-" + (idCount++);
                        op = "S";
                        scheduleById(producer, business, member, versions, delay, out);
                        liveIds.add(member);
                        if (liveIds.size() > 5000) {
                            liveIds.subList(0, 2500).clear();
                        }
                    } else if (dice < 88) { // schedule an id again: a new payload and due
                        member = liveIds.get(random.nextInt(liveIds.size()));
                        op = "S";
                        scheduleById(producer, business, member, versions, delay, out);
                    } else if (dice < 95) { // move an id
                        member = liveIds.get(random.nextInt(liveIds.size()));
                        op = "R";
                        long due = redisNow(redis) + delay;
                        boolean moved = producer.rescheduleById(business, member, Instant.ofEpochMilli(due));
                        out.write("R " + member + " " + (moved ? due : -1) + " " + System.currentTimeMillis() + "\n");
                    } else { // cancel an id
                        member = liveIds.get(random.nextInt(liveIds.size()));
                        op = "C";
                        boolean cancelled = producer.cancelById(business, member);
                        out.write("C " + member + " " + (cancelled ? 1 : 0) + " " + System.currentTimeMillis() + "\n");
                    }
                } catch (RuntimeException e) {
                    if (member != null) {
                        out.write("U " + member + " " + op + " " + System.currentTimeMillis() + "\n");
                    }
                    System.err.println("produce: " + op + " " + member + " failed: " + e);
                    Thread.sleep(200);
                }
            }
        }
        connection.close();
        client.shutdown();
        factory.destroy();
        OUT.printf("produce: %d operations (%d plain, %d ids)%n", ops, plainCount, idCount);
    }

    private static void scheduleById(
            RedisDelayedMessageProducer producer,
            String business,
            String id,
            Map<String, Integer> versions,
            long delay,
            BufferedWriter out)
            throws IOException {
        int version = versions.merge(id, 1, Integer::sum);
        String payload = id + "#" + version;
        long due = producer.scheduleByIdAfter(business, id, payload, Duration.ofMillis(delay));
        out.write("S " + id + " i " + payload + " " + due + " " + System.currentTimeMillis() + "\n");
    }

    private static long redisNow(RedisCommands<String, String> redis) {
        List<String> time = redis.time();
        return Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Consumer

    /**
     * Declares the exchange, a quorum queue and its binding on the cluster, then records every delivery with the
     * host time it arrived, acknowledging it after it is written. Automatic recovery follows a stopped node to the
     * next address; what the broker redelivers after that carries the redelivered flag (the checker tells those
     * from the relay's duplicates by the relay's own publish stamp). Ends when {@code stop-file} exists.
     */
    private static void consume(Map<String, String> o) throws Exception {
        List<Address> addresses = new ArrayList<>();
        for (String p : need(o, "rabbit-ports").split(",")) {
            addresses.add(new Address("127.0.0.1", Integer.parseInt(p.trim())));
        }
        String exchange = need(o, "exchange");
        String queue = need(o, "queue");
        String routingKey = need(o, "routing-key");
        Path stopFile = Path.of(need(o, "stop-file"));
        Path journal = Path.of(need(o, "journal"));
        Path ready = Path.of(need(o, "ready-file"));

        ConnectionFactory cf = new ConnectionFactory();
        cf.setUsername("guest");
        cf.setPassword("guest");
        cf.setAutomaticRecoveryEnabled(true);
        cf.setTopologyRecoveryEnabled(true);
        cf.setNetworkRecoveryInterval(1000);
        cf.setRequestedHeartbeat(10);
        cf.setConnectionTimeout(5000);
        Connection connection = cf.newConnection(addresses, "soak-consumer");
        Channel channel = connection.createChannel();
        channel.exchangeDeclare(exchange, "direct", true);
        channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
        channel.queueBind(queue, exchange, routingKey);
        channel.basicQos(500);
        Object lock = new Object();
        BufferedWriter out = Files.newBufferedWriter(
                journal, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        long[] count = {0};
        channel.basicConsume(queue, false, "soak", new DefaultConsumer(channel) {
            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties p, byte[] body)
                    throws IOException {
                long received = System.currentTimeMillis();
                Map<String, Object> h = p.getHeaders() == null ? Map.of() : p.getHeaders();
                Object id = h.get("x-delay-id");
                String line = received + " " + (envelope.isRedeliver() ? 1 : 0) + " " + p.getMessageId() + " "
                        + h.get("x-delay-due-at") + " " + h.get("x-delay-relayed-at") + " "
                        + h.get("x-delay-attempt") + " " + h.get("x-delay-shard") + " "
                        + (id == null ? "-" : id.toString()) + " " + new String(body, StandardCharsets.UTF_8) + "\n";
                synchronized (lock) {
                    out.write(line);
                    count[0]++;
                }
                getChannel().basicAck(envelope.getDeliveryTag(), false);
            }
        });
        Files.writeString(ready, "ready\n");
        while (!Files.exists(stopFile)) {
            Thread.sleep(250);
            synchronized (lock) {
                out.flush();
            }
        }
        synchronized (lock) {
            out.flush();
            out.close();
        }
        try {
            connection.close(5000);
        } catch (Exception e) {
            System.err.println("consume: close: " + e);
        }
        OUT.printf("consume: %d deliveries recorded%n", count[0]);
    }

    /**
     * Takes the queue's binding away for {@code seconds}, then binds it again: the relay's publishes come back
     * unroutable (mandatory) and go to the dead set at once (a deterministic failure): what the replay fault and the
     * final replay then bring back.
     */
    private static void unbind(Map<String, String> o) throws Exception {
        ConnectionFactory cf = new ConnectionFactory();
        cf.setUsername("guest");
        cf.setPassword("guest");
        List<Address> addresses = new ArrayList<>();
        for (String p : need(o, "rabbit-ports").split(",")) {
            addresses.add(new Address("127.0.0.1", Integer.parseInt(p.trim())));
        }
        String exchange = need(o, "exchange");
        String queue = need(o, "queue");
        String routingKey = need(o, "routing-key");
        try (Connection connection = cf.newConnection(addresses, "soak-unbind")) {
            Channel channel = connection.createChannel();
            channel.queueUnbind(queue, exchange, routingKey);
            try {
                Thread.sleep(Long.parseLong(need(o, "seconds")) * 1000);
            } finally {
                channel.queueBind(queue, exchange, routingKey);
            }
        }
        OUT.println("unbind: binding " + exchange + " -> " + queue + " removed and restored");
    }

    // ---------------------------------------------------------------------------------------------------------
    // Checker

    /** One schedule of a member: its payload and every due time it was given while scheduled. */
    private static final class Version {
        final String payload;
        final List<Long> dues = new ArrayList<>();
        final long scheduledAt;
        Long cancelledAt;

        Version(String payload, long due, long scheduledAt) {
            this.payload = payload;
            this.dues.add(due);
            this.scheduledAt = scheduledAt;
        }

        long due() {
            return dues.get(dues.size() - 1);
        }
    }

    /** Everything the producer did to one member. */
    private static final class Member {
        final boolean byId;
        final List<Version> versions = new ArrayList<>();
        boolean uncertain;

        Member(boolean byId) {
            this.byId = byId;
        }

        Version latest() {
            return versions.get(versions.size() - 1);
        }
    }

    private record Delivery(
            long received,
            boolean redelivered,
            String messageId,
            long dueAt,
            long relayedAt,
            int attempt,
            String id,
            String body) {

        String member() {
            return id.equals("-") ? body : id;
        }

        String publishKey() {
            return messageId + "/" + relayedAt + "/" + attempt;
        }
    }

    /**
     * Judges the journals and the Redis left behind. Exit 1 on loss, early delivery or a delivery of something
     * cancelled before its due; 3 when only the softer checks fail (duplicates over the window, entries left in
     * flight, scheduled or dead); 0 otherwise.
     */
    private static int check(Map<String, String> o) throws Exception {
        long skew = Long.parseLong(o.getOrDefault("skew-ms", "20"));
        long stampSlack = Long.parseLong(o.getOrDefault("stamp-slack-ms", "0"));
        List<Long> stampDeficits = new ArrayList<>();
        long window = Long.parseLong(need(o, "duplicate-window"));
        long lateMs = Long.parseLong(o.getOrDefault("late-ms", "2000"));
        Map<String, Member> members = new HashMap<>();
        long[] ops = new long[4];
        try (BufferedReader in = Files.newBufferedReader(Path.of(need(o, "produced")))) {
            for (String line; (line = in.readLine()) != null; ) {
                String[] f = line.split(" ");
                if (f.length < 4) {
                    continue; // a torn last line of a killed producer
                }
                switch (f[0]) {
                    case "S" -> {
                        ops[0]++;
                        Member m = members.computeIfAbsent(f[1], x -> new Member(f[2].equals("i")));
                        m.versions.add(new Version(f[3], Long.parseLong(f[4]), Long.parseLong(f[5])));
                    }
                    case "R" -> {
                        ops[1]++;
                        long due = Long.parseLong(f[2]);
                        if (due >= 0) {
                            members.get(f[1]).latest().dues.add(due);
                        }
                    }
                    case "C" -> {
                        ops[2]++;
                        if (f[2].equals("1")) {
                            members.get(f[1]).latest().cancelledAt = Long.parseLong(f[3]);
                        }
                    }
                    case "U" -> {
                        ops[3]++;
                        Member m = members.get(f[1]);
                        if (m != null) {
                            m.uncertain = true;
                        }
                    }
                    default -> throw new IllegalStateException("bad journal line: " + line);
                }
            }
        }
        List<Delivery> deliveries = new ArrayList<>();
        try (BufferedReader in = Files.newBufferedReader(Path.of(need(o, "delivered")))) {
            for (String line; (line = in.readLine()) != null; ) {
                String[] f = line.split(" ", 9);
                if (f.length < 9) {
                    continue;
                }
                deliveries.add(new Delivery(
                        Long.parseLong(f[0]),
                        f[1].equals("1"),
                        f[2],
                        Long.parseLong(f[3]),
                        Long.parseLong(f[4]),
                        Integer.parseInt(f[5]),
                        f[7],
                        f[8]));
            }
        }

        // physical publishes: the broker's own redeliveries to this consumer carry the same relay stamp
        Map<String, Delivery> publishes = new HashMap<>();
        long brokerRedeliveries = 0;
        for (Delivery d : deliveries) {
            if (publishes.putIfAbsent(d.publishKey(), d) != null) {
                brokerRedeliveries++;
            }
        }
        Map<String, List<Delivery>> byMember = new HashMap<>();
        for (Delivery d : publishes.values()) {
            byMember.computeIfAbsent(d.member(), x -> new ArrayList<>()).add(d);
        }

        List<String> lost = new ArrayList<>();
        List<String> early = new ArrayList<>();
        List<String> cancelledDelivered = new ArrayList<>();
        List<String> unknown = new ArrayList<>();
        List<String> staleDue = new ArrayList<>();
        long duplicates = 0;
        long expected = 0;
        long cancelledBeforeDue = 0;
        long supersededUndelivered = 0;
        long uncertain = 0;
        List<Long> lateness = new ArrayList<>();
        TreeMap<Long, Long> lateByDue = new TreeMap<>();
        for (Map.Entry<String, Member> e : members.entrySet()) {
            String name = e.getKey();
            Member m = e.getValue();
            List<Delivery> got = byMember.getOrDefault(name, List.of());
            if (m.uncertain) {
                uncertain++;
                continue;
            }
            Map<String, Integer> versionOf = new HashMap<>();
            for (int v = 0; v < m.versions.size(); v++) {
                versionOf.putIfAbsent(m.versions.get(v).payload, v);
            }
            // never early: by the relay's stamp (Redis time), by arrival (host time), and never before the earliest
            // due the producer gave this payload's version or an earlier one (a retry publishes the current payload)
            Map<String, Integer> perDelivery = new HashMap<>();
            for (Delivery d : got) {
                Integer v = versionOf.get(d.body);
                if (v == null) {
                    unknown.add(name + " body=" + d.body);
                    continue;
                }
                long earliest = Long.MAX_VALUE;
                boolean dueKnown = false;
                for (int i = 0; i <= v; i++) {
                    for (long due : m.versions.get(i).dues) {
                        earliest = Math.min(earliest, due);
                        dueKnown |= due == d.dueAt;
                    }
                }
                // the arrival on this host (Redis runs on it: one clock) is the authority on "never early"
                if (d.received < d.dueAt - skew || d.received < earliest - skew) {
                    early.add(name + " body=" + d.body + " due-at=" + d.dueAt + " relayed-at=" + d.relayedAt
                            + " received=" + d.received + " earliest-due=" + earliest);
                }
                // x-delay-relayed-at: the relay's Redis time when it published, never before the pop's own TIME
                if (d.relayedAt < d.dueAt) {
                    long deficit = d.dueAt - d.relayedAt;
                    stampDeficits.add(deficit);
                    if (deficit > stampSlack) {
                        early.add(name + " body=" + d.body + " x-delay-relayed-at " + d.relayedAt
                                + " is " + deficit + " ms before x-delay-due-at " + d.dueAt + " (received="
                                + d.received + ")");
                    }
                }
                if (!dueKnown) {
                    staleDue.add(name + " body=" + d.body + " due-at=" + d.dueAt);
                }
                perDelivery.merge(d.body + "@" + d.dueAt, 1, Integer::sum);
            }
            for (int c : perDelivery.values()) {
                duplicates += c - 1;
            }
            Version last = m.latest();
            for (Version v : m.versions) {
                boolean delivered = got.stream().anyMatch(d -> d.body.equals(v.payload) && d.dueAt == v.due());
                if (v.cancelledAt != null) {
                    // a successful cancel found the entry still scheduled (not popped): its delivery must never come
                    cancelledBeforeDue++;
                    if (delivered) {
                        cancelledDelivered.add(
                                name + " payload=" + v.payload + " due=" + v.due() + " cancelled-at=" + v.cancelledAt);
                    }
                } else if (v == last) {
                    expected++;
                    // delivered at all: when is judged above (early)
                    boolean any = got.stream().anyMatch(d -> d.body.equals(v.payload));
                    if (!any) {
                        lost.add(name + " payload=" + v.payload + " due=" + v.due() + " deliveries-of-member="
                                + got.size());
                    } else {
                        got.stream()
                                .filter(d -> d.body.equals(v.payload) && d.dueAt == v.due())
                                .mapToLong(d -> d.received - v.due())
                                .min()
                                .ifPresent(first -> {
                                    lateness.add(first);
                                    if (first > lateMs) {
                                        lateByDue.merge(v.due(), first, Math::max);
                                    }
                                });
                    }
                } else if (!delivered) {
                    supersededUndelivered++;
                }
            }
        }
        lateness.sort(null);

        OUT.println();
        OUT.println("== checker ==");
        OUT.printf(
                "produced: %d schedules, %d reschedules, %d cancels, %d writes with unknown outcome "
                        + "(%d members not judged)%n",
                ops[0], ops[1], ops[2], ops[3], uncertain);
        OUT.printf(
                "members: %d (%d by id, %d by message)%n",
                members.size(),
                members.values().stream().filter(m -> m.byId).count(),
                members.values().stream().filter(m -> !m.byId).count());
        OUT.printf(
                "deliveries recorded: %d; distinct relay publishes: %d; broker redeliveries to the consumer: %d%n",
                deliveries.size(), publishes.size(), brokerRedeliveries);
        OUT.printf("expected (latest version of every member not cancelled): %d; lost: %d%n", expected, lost.size());
        OUT.printf(
                "early deliveries: %d; cancelled before due (by a successful cancel): %d, of them delivered: %d%n",
                early.size(), cancelledBeforeDue, cancelledDelivered.size());
        OUT.printf(
                "x-delay-relayed-at before x-delay-due-at: %d deliveries, by %s ms (allowed up to %d ms; the "
                        + "relay stamps at least the pop's Redis TIME, and arrival on this host judges early too)%n",
                stampDeficits.size(),
                stampDeficits.isEmpty()
                        ? "-"
                        : stampDeficits.stream().mapToLong(x -> x).min().getAsLong() + "-"
                                + stampDeficits.stream().mapToLong(x -> x).max().getAsLong(),
                stampSlack);
        OUT.printf(
                "superseded versions not delivered (replaced before their pop, allowed): %d%n", supersededUndelivered);
        OUT.printf(
                "deliveries with a payload the producer never wrote: %d; with a due-at the producer never set "
                        + "(dead-letter replays, allowed): %d%n",
                unknown.size(), staleDue.size());
        OUT.printf(
                "duplicates (same payload and due-at published again): %d; window: %d (%s)%n",
                duplicates, window, duplicates <= window ? "within" : "EXCEEDED");
        if (!lateness.isEmpty()) {
            OUT.printf(
                    "lateness of the latest versions (first arrival - due, ms): p50 %d, p99 %d, p99.9 %d, max %d%n",
                    lateness.get(lateness.size() / 2),
                    lateness.get((int) (lateness.size() * 0.99)),
                    lateness.get((int) (lateness.size() * 0.999)),
                    lateness.get(lateness.size() - 1));
        }
        lateClusters(lateByDue, lateMs);
        if (o.containsKey("out-dir")) { // every finding in full, one a line, for a reproduction
            Path dir = Path.of(o.get("out-dir"));
            Files.write(dir.resolve("lost.txt"), lost);
            Files.write(dir.resolve("early.txt"), early);
            Files.write(dir.resolve("cancelled-delivered.txt"), cancelledDelivered);
            Files.write(dir.resolve("unknown-payload.txt"), unknown);
        }
        printSome("LOST", lost);
        printSome("EARLY", early);
        printSome("CANCELLED BUT DELIVERED", cancelledDelivered);
        printSome("UNKNOWN PAYLOAD", unknown);

        int soft = 0;
        if (o.containsKey("redis-port")) {
            Map<String, Integer> deadShard = new HashMap<>();
            soft = leftovers(Integer.parseInt(o.get("redis-port")), need(o, "business"), deadShard);
            // a lost member may still sit in a dead set: say where, and whether a shard count in force reaches it
            Map<Integer, Long> lostDeadByShard = new TreeMap<>();
            long lostNowhere = 0;
            for (String l : lost) {
                Integer shard = deadShard.get(l.substring(0, l.indexOf(' ')));
                if (shard == null) {
                    lostNowhere++;
                } else {
                    lostDeadByShard.merge(shard, 1L, Long::sum);
                }
            }
            if (!lost.isEmpty()) {
                OUT.printf(
                        "lost, where they are: %d in a dead set (by shard: %s), %d in no key of the business%n",
                        lost.size() - lostNowhere, lostDeadByShard, lostNowhere);
            }
        }
        if (o.containsKey("relayed-metric")) {
            long metric = Long.parseLong(o.get("relayed-metric"));
            OUT.printf(
                    "metrics: delay_relay_relayed_total summed over relay lifetimes %d vs distinct publishes "
                            + "received %d (difference %d: confirms counted after a lifetime's last scrape, or publishes "
                            + "confirmed that the consumer saw as one)%n",
                    metric, publishes.size(), publishes.size() - metric);
        }
        if (!lost.isEmpty() || !early.isEmpty() || !cancelledDelivered.isEmpty() || !unknown.isEmpty()) {
            OUT.println("RESULT: FAIL (loss, early delivery, cancelled delivery or unknown payload)");
            return 1;
        }
        if (duplicates > window || soft > 0) {
            OUT.println("RESULT: SOFT FAIL (duplicates over the window, or entries left in Redis)");
            return 3;
        }
        OUT.println("RESULT: PASS");
        return 0;
    }

    /**
     * Latest versions that arrived more than {@code lateMs} after their due, grouped by due time (entries due within
     * 2 s of each other form one group), to be read against the fault timeline.
     */
    private static void lateClusters(TreeMap<Long, Long> lateByDue, long lateMs) {
        OUT.printf("arrived over %d ms after due: %d latest versions%n", lateMs, lateByDue.size());
        java.time.format.DateTimeFormatter hms =
                java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss").withZone(java.time.ZoneOffset.UTC);
        long start = -1;
        long end = -1;
        long count = 0;
        long worst = 0;
        List<long[]> groups = new ArrayList<>();
        for (Map.Entry<Long, Long> e : lateByDue.entrySet()) {
            if (start >= 0 && e.getKey() - end > 2000) {
                groups.add(new long[] {start, end, count, worst});
                start = -1;
            }
            if (start < 0) {
                start = e.getKey();
                count = 0;
                worst = 0;
            }
            end = e.getKey();
            count++;
            worst = Math.max(worst, e.getValue());
        }
        if (start >= 0) {
            groups.add(new long[] {start, end, count, worst});
        }
        for (long[] g : groups) {
            OUT.printf(
                    "  due %s-%s UTC: %d late, by up to %d ms%n",
                    hms.format(Instant.ofEpochMilli(g[0])), hms.format(Instant.ofEpochMilli(g[1])), g[2], g[3]);
        }
    }

    private static void printSome(String what, List<String> items) {
        for (int i = 0; i < Math.min(20, items.size()); i++) {
            OUT.println(what + ": " + items.get(i));
        }
        if (items.size() > 20) {
            OUT.println(what + ": ... and " + (items.size() - 20) + " more");
        }
    }

    /** Counts what is left in the business's keys: scheduled, in flight, waiting for a retry, dead. */
    private static int leftovers(int port, String business, Map<String, Integer> deadShard) {
        RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisCommands<String, String> r = c.sync();
            String k = "delayqueue:" + business;
            Map<String, Long> counts = new TreeMap<>();
            Set<String> seen = new HashSet<>();
            ScanIterator<String> keys = ScanIterator.scan(
                    r, ScanArgs.Builder.matches("*" + k + ":*").limit(500));
            while (keys.hasNext()) {
                String key = keys.next();
                if (!seen.add(key)) {
                    continue;
                }
                String kind;
                if (key.matches(java.util.regex.Pattern.quote(k) + ":\\d+")) {
                    kind = "scheduled";
                } else if (key.endsWith("}:inflight")) {
                    kind = "inflight";
                } else if (key.endsWith("}:dead")) {
                    kind = "dead";
                } else if (key.endsWith("}:payloads")) {
                    kind = "payloads";
                } else {
                    continue;
                }
                long n = kind.equals("payloads") ? r.hlen(key) : r.zcard(key);
                if (kind.equals("dead")) {
                    int shard = Integer.parseInt(key.substring(
                            key.lastIndexOf(':', key.length() - 7) + 1, key.length() - "}:dead".length()));
                    for (String member : r.zrange(key, 0, -1)) {
                        deadShard.put(member, shard);
                    }
                }
                counts.merge(kind, n, Long::sum);
            }
            OUT.printf(
                    "left in Redis: scheduled %d, in flight or waiting for a retry %d, dead %d, payloads %d; "
                            + "K:meta %s%n",
                    counts.getOrDefault("scheduled", 0L),
                    counts.getOrDefault("inflight", 0L),
                    counts.getOrDefault("dead", 0L),
                    counts.getOrDefault("payloads", 0L),
                    r.hgetall(k + ":meta"));
            long bad = counts.getOrDefault("scheduled", 0L)
                    + counts.getOrDefault("inflight", 0L)
                    + counts.getOrDefault("dead", 0L)
                    + counts.getOrDefault("payloads", 0L);
            return bad > 0 ? 1 : 0;
        } finally {
            client.shutdown();
        }
    }
}
