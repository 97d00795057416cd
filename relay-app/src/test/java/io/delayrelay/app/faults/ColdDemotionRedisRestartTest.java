package io.delayrelay.app.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.api.internal.ByteRedisTemplates;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.PrivateRedis;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.StagedShards;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;

import static io.delayrelay.api.DelayQueueKeys.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 27, the cold tier through a Redis crash in the other direction: the relay's Redis (a server of this test's
 * own, {@code appendonly yes}, {@code appendfsync always}) is killed with SIGKILL while the relay demotes 40,000
 * far-future entries into cold blocks (some blocks written, most entries still hot), then restarted from its AOF.
 *
 * <p>What the AOF held at the kill is read on a copy of it, loaded by a second server (the restarted one is already
 * the relay's again): every live entry is hot or cold, never both, never neither, and the kill fell in the middle of
 * the moves (both hot and cold entries, several blocks). Then the {@code appendfsync everysec} case: a crash of the
 * machine (not of Redis) may lose the last second of the AOF, cut at any byte. The copy is cut in the middle of
 * several demotions' {@code MULTI}/{@code EXEC} (a script's effects), and each torn copy, loaded with
 * {@code aof-load-truncated yes} (the default), must equal the same AOF cut just before that {@code MULTI}: a move is
 * lost whole or kept whole, never half. Last, the relay (reconnected to the restarted server) finishes: entries
 * cancelled through relay-api after the restart never arrive, every other arrives once, none early.
 *
 * <p>{@code -Dcold.demotion-restart.port=N} gives the server a fixed port; by default the OS chooses a free one.
 *
 * <p>Longer than 300 lines because it carries the AOF reader its torn copies need ({@link Aof}: the MULTI/EXEC
 * transactions by byte offset) and the copying and cutting of AOF directories.
 */
@Tag("faults")
class ColdDemotionRedisRestartTest {

    private static final int SHARDS = 4;
    private static final int ENTRIES = 40_000;
    /** Killed once this many are cold: a few blocks (at most 1,000 entries each) of the 40,000. */
    private static final int KILL_AT_COLD = 3_000;

    private static final int CANCEL_EVERY = 20;
    private static final int CANCEL_THREADS = 8;
    /**
     * Due 50-70 s after the write: demoted once the relay is up (cold-after 10 s), back from 45 s on (lead 5 s). The
     * kill and the cancels must come before that; the seven loads of AOF copies (on servers the relay does not use)
     * come after the cancels. With the loads before the cancels, a busy 2-core box ended them 55 s after the write.
     */
    private static final long FIRST_DUE_MS = 50_000;

    private static final long SPREAD_MS = 20_000;
    /** Torn copies checked (each against its boundary copy: two server starts). */
    private static final int TORN = 3;

    private final RelayTestKit kit = new RelayTestKit();
    private final List<PrivateRedis> servers = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        try {
            kit.close(); // the relay first: it gives its seat back while its Redis still answers
        } finally {
            servers.forEach(PrivateRedis::close);
        }
    }

    @Test
    void aRedisKillDuringDemotionLeavesEachEntryInOnePlaceAndEachMoveWholeOrLost() throws Exception {
        Path dir = ColdFaults.freshDirectory("cold-demotion-restart");
        PrivateRedis redis = server(Integer.getInteger("cold.demotion-restart.port", 0), dir.resolve("live"), "always");

        String business = kit.business("colddemote");
        String exchange = kit.exchange("colddemote");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        Deliveries.Inbox inbox = new Deliveries.Inbox(kit.consume(kit.queue(exchange, "due")));
        Map<String, Object> props = ColdFaults.relayProperties(kit, redis, business, exchange, SHARDS);
        ColdStore cold = new ColdStore(ByteRedisTemplates.create(redis.factory()));

        // the relay first: the due times below leave a fixed time for the kill and the cancels, and with the relay's
        // start (a Spring context in this JVM) inside it, a CI fork beside three others killed Redis only 47 s after
        // the write, past the first promotion at 45 s
        kit.startRelay(props);

        // written as schedule.lua leaves them (pipelined HSET payload + ZADD K:i), shown to the relay all at once
        // (StagedShards): its demotions then begin on the whole set, which a test watching from outside can cut in the
        // middle
        long t0 = redis.nowMs();
        Map<String, Long> due = new HashMap<>();
        try (RedisConnection c = redis.connection()) {
            c.openPipeline();
            for (int i = 0; i < ENTRIES; i++) {
                String id = "demote-" + i;
                long at = t0 + FIRST_DUE_MS + (long) i * SPREAD_MS / ENTRIES;
                int shard = ShardSelector.shardOf(bytes(id), SHARDS);
                // the payload first: the relay never sees the id in K:i without it (schedule.lua writes both at once)
                c.hashCommands().hSet(bytes(keys.payloads(shard)), bytes(id), bytes(id));
                c.zSetCommands().zAdd(StagedShards.key(keys, shard), at, bytes(id));
                due.put(id, at);
            }
            c.closePipeline();
        }
        try (RedisConnection c = redis.connection()) {
            StagedShards.reveal(c, keys, SHARDS);
        }
        long written = redis.nowMs() - t0;

        // the kill: once a few blocks are cold, most entries still hot
        await().pollInterval(Duration.ofMillis(5))
                .atMost(Duration.ofSeconds(20))
                .until(() -> ColdPlaces.coldEntries(cold, keys, SHARDS) >= KILL_AT_COLD);
        redis.kill9();
        long killedAt = System.currentTimeMillis();
        long killed = killedAt - t0;
        Path atKill = dir.resolve("at-kill");
        copyTree(redis.dir().resolve("appendonlydir"), atKill.resolve("appendonlydir"));
        redis.restart();

        assertThat(killed)
                .as("killed before promotion can begin (written %d ms after the write began)", written)
                .isLessThan(FIRST_DUE_MS - 5_000);

        // the relay finishes on the restarted server; a twentieth cancelled through relay-api (hot or cold by then),
        // at once: the cancels must come before the first promotion, the checks of the AOF copies below need not
        RedisDelayedMessageProducer producer = new RedisDelayedMessageProducer(
                redis.factory(), SHARDS, Duration.ofMillis(100), DelayQueueKeys::forBusiness);
        // TIME answers while the restarted server still loads its AOF; a read of a key only once it has loaded
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
            try (RedisConnection c = redis.connection()) {
                return c.keyCommands().exists(bytes(keys.meta())) != null;
            }
        });
        long loaded = redis.nowMs() - t0;
        Set<String> cancelled = cancelEveryTwentieth(producer, business);
        long cancelsDoneAt = redis.nowMs();
        String timeline = String.format(
                "ms after the write began: written %d, killed %d, reloaded %d, %d cancels done %d",
                written, killed, loaded, cancelled.size(), cancelsDoneAt - t0);
        System.out.println("cold demotion restart: " + timeline);
        assertThat(cancelsDoneAt)
                .as("cancelled before the first promotion (%s)", timeline)
                .isLessThan(t0 + FIRST_DUE_MS - 5_000);

        // what the AOF held at the kill, on a copy the relay does not touch
        ColdPlaces.Where replayed = load("replayed", atKill, keys).assertEachInOnePlace("after the AOF replay");
        assertThat(replayed.all()).as("live entries after the AOF replay").isEqualTo(due.keySet());
        assertThat(replayed.hotCount() + replayed.coldCount())
                .as("one copy of each entry")
                .isEqualTo(ENTRIES);
        assertThat(replayed.cold()).as("some entries cold at the kill").isNotEmpty();
        assertThat(replayed.hot())
                .as("some entries still hot at the kill (mid-demotion)")
                .isNotEmpty();

        // appendfsync everysec: a machine crash cuts the AOF's tail anywhere; Redis must drop a torn move whole
        Path aof = incrementalAof(atKill);
        List<Aof.Transaction> demotions = Aof.transactions(Files.readAllBytes(aof)).stream()
                .filter(t -> t.writes(":cold-blocks"))
                .toList();
        int blocks = demotions.size();
        assertThat(blocks)
                .as("demotions (blocks written) in the AOF at the kill")
                .isGreaterThanOrEqualTo(3);
        List<String> torn = new ArrayList<>();
        for (int k = 0; k < TORN; k++) {
            Aof.Transaction t = demotions.get(blocks - 1 - k * Math.max(1, blocks / TORN - 1));
            long cut = t.start() + (t.end() - t.start()) / 2;
            ColdPlaces.Where cutMid = load("torn-" + k, truncated(atKill, dir.resolve("torn-" + k), cut), keys);
            ColdPlaces.Where cutBefore =
                    load("boundary-" + k, truncated(atKill, dir.resolve("boundary-" + k), t.start()), keys);
            assertThat(Files.readString(dir.resolve("torn-" + k).resolve("redis.log")))
                    .as("Redis loaded the torn AOF %d by truncating it", k)
                    .contains("Truncating the AOF");
            // (entries written after the cut are not in either copy: the mover demotes while they are written)
            assertThat(cutBefore.both())
                    .as("boundary copy %d: hot and cold at once", k)
                    .isEmpty();
            cutMid.assertEachInOnePlace("torn copy " + k);
            assertThat(cutMid.hotCount() + cutMid.coldCount())
                    .as("torn copy %d: one copy of each entry", k)
                    .isEqualTo(cutMid.all().size());
            assertThat(cutMid.hot())
                    .as(
                            "torn copy %d (cut at byte %d inside the demotion at %d-%d) = the AOF before that demotion",
                            k, cut, t.start(), t.end())
                    .isEqualTo(cutBefore.hot());
            assertThat(cutMid.cold()).isEqualTo(cutBefore.cold());
            assertThat(cutMid.cold().size())
                    .as("torn copy %d lost the torn demotion", k)
                    .isLessThan(replayed.cold().size());
            torn.add(cutMid.cold().size() + "/" + replayed.cold().size());
        }
        System.out.printf(
                "cold demotion restart: killed with %d cold, %d hot (%d blocks in the AOF); torn copies cold: %s%n",
                replayed.cold().size(), replayed.hot().size(), blocks, torn);

        Set<String> live = new HashSet<>(due.keySet());
        live.removeAll(cancelled);
        Deliveries.Report report = Deliveries.expect(live)
                .scheduledDue(due)
                .quiet(Duration.ofSeconds(2))
                .await(inbox, Duration.ofSeconds(90));
        FaultFigures.of(
                "11 cold: Redis kill -9 mid-demotion",
                report,
                String.format(
                        "coldAtKill=%d hotAtKill=%d blocksInAof=%d tornCopiesCold=%s cancelled=%d",
                        replayed.cold().size(),
                        replayed.hot().size(),
                        blocks,
                        String.join(",", torn),
                        cancelled.size()));
        report.assertClean();
        assertThat(report.all()).extracting(RelayTestKit.Received::text).doesNotContainAnyElementsOf(cancelled);
        assertThat(ColdPlaces.coldEntries(cold, keys, SHARDS)).isZero();
    }

    /**
     * Cancels every {@value #CANCEL_EVERY}th entry through relay-api, from {@value #CANCEL_THREADS} threads. One
     * cancel is a round trip; on a CI box busy with the pool's other forks, 2,000 in a row ended 48.8 s after the
     * write, past the first promotion (the threads share the producer's connection, which pipelines their commands).
     * Each cancel must find its entry.
     */
    private static Set<String> cancelEveryTwentieth(RedisDelayedMessageProducer producer, String business)
            throws InterruptedException, ExecutionException {
        ExecutorService pool = Executors.newFixedThreadPool(CANCEL_THREADS);
        try {
            List<Future<String>> cancels = new ArrayList<>();
            for (int i = 0; i < ENTRIES; i += CANCEL_EVERY) {
                String id = "demote-" + i;
                cancels.add(pool.submit(() -> producer.cancelById(business, id) ? id : "not found: " + id));
            }
            Set<String> cancelled = new HashSet<>();
            for (Future<String> cancel : cancels) {
                cancelled.add(cancel.get());
            }
            assertThat(cancelled).as("cancels through relay-api").noneMatch(id -> id.startsWith("not found"));
            return cancelled;
        } finally {
            pool.shutdownNow();
        }
    }

    /** A server of this test's (closed after it) with its AOF in {@code dir}, never rewritten. */
    private PrivateRedis server(int port, Path dir, String appendfsync) {
        PrivateRedis redis =
                ColdFaults.aofServer(port, dir, "--auto-aof-rewrite-percentage", "0", "--appendfsync", appendfsync);
        servers.add(redis);
        return redis;
    }

    /** Starts a server on a copy of an AOF directory, reads where each entry is, stops it. */
    private ColdPlaces.Where load(String name, Path dir, DelayQueueKeys keys) {
        PrivateRedis copy = server(0, dir, "no");
        try {
            return ColdPlaces.readOnceLoaded(name, copy, keys, SHARDS, Duration.ofSeconds(60));
        } finally {
            copy.close();
            servers.remove(copy);
        }
    }

    /** A copy of the AOF directory under {@code to}, its incremental file cut at {@code size} bytes. */
    private static Path truncated(Path from, Path to, long size) throws IOException {
        copyTree(from.resolve("appendonlydir"), to.resolve("appendonlydir"));
        try (FileChannel ch = FileChannel.open(incrementalAof(to), StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
        return to;
    }

    private static Path incrementalAof(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir.resolve("appendonlydir"))) {
            List<Path> incr = files.filter(p -> p.getFileName().toString().endsWith(".incr.aof"))
                    .toList();
            assertThat(incr).as("one incremental AOF (rewrites are off)").hasSize(1);
            return incr.get(0);
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            files.forEach(f -> {
                try {
                    Files.copy(f, to.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }

    /** The commands of an AOF (RESP arrays of bulk strings) and its MULTI/EXEC transactions, by byte offset. */
    static final class Aof {

        /** A transaction from its MULTI's first byte to its EXEC's end, and the keys its commands wrote. */
        record Transaction(long start, long end, List<String> keys) {
            boolean writes(String suffix) {
                return keys.stream().anyMatch(k -> k.endsWith(suffix));
            }
        }

        private Aof() {}

        static List<Transaction> transactions(byte[] aof) {
            List<Transaction> all = new ArrayList<>();
            int pos = 0;
            long multiAt = -1;
            List<String> keys = new ArrayList<>();
            while (pos < aof.length) {
                int start = pos;
                assertThat((char) aof[pos]).as("RESP array at byte %d", pos).isEqualTo('*');
                int eol = lineEnd(aof, pos);
                if (eol < 0) {
                    break; // a command cut by the kill: not replayed
                }
                int n = Integer.parseInt(new String(aof, pos + 1, eol - pos - 1, StandardCharsets.US_ASCII));
                pos = eol + 2;
                List<String> args = new ArrayList<>(Math.min(n, 3));
                for (int a = 0; a < n && pos < aof.length; a++) {
                    eol = lineEnd(aof, pos);
                    if (eol < 0) {
                        pos = aof.length + 1;
                        break;
                    }
                    int len = Integer.parseInt(new String(aof, pos + 1, eol - pos - 1, StandardCharsets.US_ASCII));
                    pos = eol + 2;
                    if (a < 2 && pos + len <= aof.length) {
                        args.add(new String(aof, pos, len, StandardCharsets.UTF_8));
                    }
                    pos += len + 2;
                }
                if (pos > aof.length || args.size() < Math.min(n, 2)) {
                    break; // a command cut by the kill: not replayed
                }
                String command = args.get(0).toUpperCase();
                if (command.equals("MULTI")) {
                    multiAt = start;
                    keys = new ArrayList<>();
                } else if (command.equals("EXEC")) {
                    all.add(new Transaction(multiAt, pos, keys));
                    multiAt = -1;
                } else if (multiAt >= 0 && args.size() > 1) {
                    keys.add(args.get(1));
                }
            }
            return all;
        }

        private static int lineEnd(byte[] aof, int from) {
            for (int i = from; i < aof.length - 1; i++) {
                if (aof[i] == '\r' && aof[i + 1] == '\n') {
                    return i;
                }
            }
            return -1;
        }
    }
}
