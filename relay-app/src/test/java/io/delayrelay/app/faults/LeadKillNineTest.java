package io.delayrelay.app.faults;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.config.BusinessSettings;
import io.delayrelay.app.support.CpuPriority;
import io.delayrelay.app.support.Deliveries;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.delayrelay.app.support.TestServices;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.zset.DefaultTuple;
import org.springframework.data.redis.connection.zset.Tuple;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Pop-ahead ({@code lead}) across kill -9: two exec-jar relays of one business with a lead of 250 ms (the lease, 3 s,
 * is ten times that, the most the validation allows) while 4,000 plain ZADD entries fall due over 6 s. One relay is
 * killed -9 at a moment when both hold entries popped ahead of their due time (leased under their lease token, waiting
 * on the relay's clock to be published). The survivor takes over its shards (seat TTL 2 s) and, once the killed
 * relay's leases expire, retries what it held. Every entry arrives, none before its due time (the relayed-at header
 * and the consumer's arrival, one host clock, no tolerance), the duplicated bodies are all among the killed relay's
 * in-flight entries (at most their number, plus any confirm-timeout retry), and whatever the kill held up arrives
 * within lease + retry delay + margin of the kill.
 *
 * <p>Which in-flight entries the killed relay held: lease tokens are "&lt;random prefix per relay&gt;-&lt;counter&gt;"
 * ({@code ShardStore}), kept in {@code {K:i}:attempts} as "&lt;failed&gt;:&lt;original due&gt;:&lt;token&gt;" while
 * the entry is in flight. Right after the kill the attempts records are read; the survivor's prefix is the one that
 * appears in leases taken after the kill, the killed relay's is the other one.
 */
@Tag("faults")
class LeadKillNineTest {

    static final int MESSAGES = 4_000;
    static final int SHARDS = 8;
    static final int THREADS = 2;
    static final Duration LEAD = Duration.ofMillis(250);
    static final Duration LEASE = Duration.ofSeconds(3);
    static final Duration PUBLISH_TIMEOUT = Duration.ofSeconds(2);
    static final Duration RETRY_DELAY = Duration.ofMillis(200);
    /** relay.division.seat-ttl: the killed relay's shards pass to the survivor within 4/3 of it (2.7 s < lease). */
    static final Duration SEAT_TTL = Duration.ofSeconds(2);
    /** The first entry falls due this long after the write, the last {@link #SPREAD_MS} later. */
    static final long FIRST_DUE_MS = 2_000;

    static final long SPREAD_MS = 6_000;
    /** Margin for a loaded 2-core machine: a pop, a publish and its confirm, the consumer. */
    static final Duration MARGIN = Duration.ofMillis(2_500);
    /**
     * The stated take-over bound, from the kill: the killed relay's leases expire within the lease (they were taken
     * before the kill), the survivor owns its shards by then (seat TTL x 4/3 < lease) and its pop at the lease
     * deadline takes them back; they are retried after the retry delay.
     */
    static final Duration TAKE_OVER = LEASE.plus(RETRY_DELAY).plus(MARGIN);
    /** At the kill, each relay holds at least this many entries due at least {@link #AHEAD_MS} after Redis time. */
    static final int MIN_AHEAD = 3;

    static final long AHEAD_MS = 40;

    private final RelayTestKit kit = new RelayTestKit();
    private final List<RelayProcess> relays = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        CpuPriority.restoreSelf();
        for (RelayProcess relay : relays) {
            relay.close();
        }
        kit.close();
    }

    @Test
    void killNineOfARelayHoldingEntriesPoppedAheadLosesNoneAndPublishesNoneEarly() throws Exception {
        assertThat(LEAD.multipliedBy(BusinessSettings.LEASE_PER_LEAD)).isLessThanOrEqualTo(LEASE);
        assertThat(SEAT_TTL.plus(SEAT_TTL.dividedBy(3))).isLessThanOrEqualTo(LEASE);
        String business = kit.business("leadkill");
        String exchange = kit.exchange("leadkill");
        DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
        Deliveries.Inbox inbox = new Deliveries.Inbox(kit.consume(kit.queue(exchange, "due")));

        RelayProcess survivor =
                RelayProcess.start("leadkill-A", properties(business, exchange, "A"), false, RelayProcess.C1);
        relays.add(survivor);
        RelayProcess victim =
                RelayProcess.start("leadkill-B", properties(business, exchange, "B"), false, RelayProcess.C1);
        relays.add(victim);
        await("two relays started").atMost(Duration.ofMinutes(4)).until(() -> {
            for (RelayProcess r : relays) {
                assertThat(r.isAlive()).as("relay alive; see %s", r.log()).isTrue();
                if (!r.started()) {
                    return false;
                }
            }
            return true;
        });
        // it runs in the pool of forks: this JVM (the consumer, the arrival clock) and the relays run at a higher CPU
        // priority than the other forks, so the take-over bound holds against their JVM start-ups
        CpuPriority.raiseSelfAnd(survivor.pid(), victim.pid());
        await("two live seats")
                .atMost(Duration.ofSeconds(20))
                .until(() -> seats(keys).size() == 2);
        // each renews once more after the second joined, so both know of each other: one popper per shard
        awaitEveryoneRenewedSince(keys, kit.redisNowMs());

        Map<String, Long> due = new HashMap<>();
        List<String> sent = seed(keys, due);
        long firstDue = due.values().stream().mapToLong(Long::longValue).min().orElseThrow();

        // the kill: mid-stream (a quarter delivered), at a moment when both relays hold entries popped ahead
        AtomicReference<Leases> beforeKill = new AtomicReference<>();
        await("both relays holding entries popped ahead, mid-stream")
                .atMost(Duration.ofSeconds(FIRST_DUE_MS / 1000 + SPREAD_MS / 1000 + 10))
                .pollInterval(Duration.ofMillis(10))
                .until(() -> {
                    assertThat(victim.isAlive())
                            .as("relay B alive; see %s", victim.log())
                            .isTrue();
                    if (inbox.distinct() < MESSAGES / 4) {
                        return false;
                    }
                    Leases now = leases(keys);
                    Map<String, Integer> ahead = now.aheadByPrefix(now.redisNowMs() + AHEAD_MS);
                    beforeKill.set(now);
                    return ahead.size() == 2 && ahead.values().stream().allMatch(n -> n >= MIN_AHEAD);
                });
        // Redis time just before SIGKILL: an entry the dead relay still holds that falls due after it had been popped
        // ahead and was held, unpublished, at the kill
        long killRedisMs = kit.redisNowMs();
        long killWallMs = System.currentTimeMillis();
        victim.kill9();
        long deadAfterMs = System.currentTimeMillis() - killWallMs;
        Leases atKill = leases(keys);
        int deliveredAtKill = inbox.distinct();
        Set<String> prefixes = beforeKill.get().aheadByPrefix(Long.MIN_VALUE).keySet();
        assertThat(prefixes)
                .as("lease-token prefixes before the kill: one per relay")
                .hasSize(2);

        // the survivor's prefix: the one of leases taken after the kill (only the survivor pops now)
        AtomicReference<String> survivorPrefix = new AtomicReference<>();
        await("the survivor leases after the kill")
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> {
                    for (Lease lease : leases(keys).byMember().values()) {
                        if (!lease.token().isEmpty() && !atKill.tokens().contains(lease.token())) {
                            survivorPrefix.set(lease.prefix());
                            return true;
                        }
                    }
                    return false;
                });
        assertThat(prefixes).contains(survivorPrefix.get());
        String killedPrefix = prefixes.stream()
                .filter(p -> !p.equals(survivorPrefix.get()))
                .findFirst()
                .orElseThrow();
        Map<String, Lease> killedHeld = atKill.heldBy(killedPrefix);
        long killedAhead = killedHeld.values().stream()
                .filter(l -> l.originalDueMs() > killRedisMs)
                .count();
        // due even after the process was gone (reaped): certainly never published by it
        long killedAheadOfDeath = killedHeld.values().stream()
                .filter(l -> l.originalDueMs() > atKill.redisNowMs())
                .count();
        long survivorHeld = atKill.heldBy(survivorPrefix.get()).size();
        System.out.printf(
                "kill -9 of B at %s, %d ms after the first due time (gone after %d ms): %d delivered; B held %d in flight"
                        + " (%d popped ahead of their due time, %d due after it was gone), A %d; before the kill"
                        + " (ahead by %d ms): %s%n",
                Instant.ofEpochMilli(killWallMs),
                killWallMs - firstDue,
                deadAfterMs,
                deliveredAtKill,
                killedHeld.size(),
                killedAhead,
                killedAheadOfDeath,
                survivorHeld,
                AHEAD_MS,
                beforeKill.get().aheadByPrefix(beforeKill.get().redisNowMs() + AHEAD_MS));
        assertThat(killedAhead)
                .as("entries the killed relay held popped ahead of their due time at the kill")
                .isPositive();

        Deliveries.Report drained = Deliveries.expect(sent)
                .scheduledDue(due)
                .quiet(Duration.ofSeconds(2))
                .await(inbox, Duration.ofSeconds(40));
        long retried = survivor.retriedAfterConfirmTimeout() + victim.retriedAfterConfirmTimeout();
        Deliveries.Report report = Deliveries.expect(sent)
                .scheduledDue(due)
                .duplicatesAtMost(
                        killedHeld.size() + (int) retried,
                        "killed relay's in-flight " + killedHeld.size() + " + " + retried
                                + " retried after a confirm timeout")
                .measure(drained.all());

        // per body: arrivals (consumer's clock; Redis runs on this host, one clock)
        Map<String, List<Long>> arrivals = new HashMap<>();
        long minMarginMs = Long.MAX_VALUE;
        for (Received r : report.all()) {
            arrivals.computeIfAbsent(r.text(), b -> new ArrayList<>()).add(r.receivedAtMs());
            Long d = due.get(r.text());
            if (d != null) {
                assertThat(dueInBody(r.text())).isEqualTo(d);
                minMarginMs = Math.min(minMarginMs, r.receivedAtMs() - d);
            }
        }
        Set<String> duplicated = new HashSet<>();
        arrivals.forEach((body, at) -> {
            if (at.size() > 1) {
                duplicated.add(body);
            }
        });
        Set<String> duplicatedElsewhere = new HashSet<>(duplicated);
        duplicatedElsewhere.removeAll(killedHeld.keySet());
        long heldDeliveredBeforeKill = killedHeld.keySet().stream()
                .filter(b -> arrivals.getOrDefault(b, List.of()).stream().anyMatch(t -> t < killWallMs))
                .count();
        // the take-over: what the kill held up (first arrival after it) came within the bound of the kill, or of its
        // due time when later; each entry the killed relay held came again after the kill (its lease expired)
        long worstPickupMs = 0;
        for (Map.Entry<String, List<Long>> e : arrivals.entrySet()) {
            long first = e.getValue().get(0);
            if (first >= killWallMs) {
                worstPickupMs = Math.max(worstPickupMs, first - Math.max(due.get(e.getKey()), killWallMs));
            }
        }
        // due after the killed relay was gone: never published by it (a relay never publishes before due), so the
        // survivor's retry is their one delivery
        List<String> aheadOfDeathTwice = killedHeld.values().stream()
                .filter(l -> l.originalDueMs() > atKill.redisNowMs())
                .map(Lease::member)
                .filter(duplicated::contains)
                .toList();
        long killedRetriedWithinMs = 0;
        List<String> heldNotRetried = new ArrayList<>();
        for (String body : killedHeld.keySet()) {
            long last = arrivals.getOrDefault(body, List.of()).stream()
                    .mapToLong(Long::longValue)
                    .max()
                    .orElse(Long.MIN_VALUE);
            if (last < killWallMs) {
                heldNotRetried.add(body);
            } else {
                killedRetriedWithinMs = Math.max(killedRetriedWithinMs, last - killWallMs);
            }
        }

        kit.awaitInflightSettled(business, Duration.ofSeconds(10));
        long expiredTakenBack = leasesExpired(survivor.output());
        FaultFigures.of(
                "14 lead 250ms: kill -9 holding popped-ahead",
                report,
                String.format(
                        "killAfterFirstDueMs=%d deliveredAtKill=%d killedInFlight=%d killedAhead=%d killedAheadOfDeath=%d"
                                + " killedDeliveredBeforeKill=%d survivorInFlight=%d duplicatesOutsideKilled=%d"
                                + " confirmTimeoutRetries=%d worstPickupMs=%d killedRetriedWithinMs=%d"
                                + " takeOverBoundMs=%d minArrivalMinusDueMs=%d survivorTookBackExpired=%d",
                        killWallMs - firstDue,
                        deliveredAtKill,
                        killedHeld.size(),
                        killedAhead,
                        killedAheadOfDeath,
                        heldDeliveredBeforeKill,
                        survivorHeld,
                        duplicatedElsewhere.size(),
                        retried,
                        worstPickupMs,
                        killedRetriedWithinMs,
                        TAKE_OVER.toMillis(),
                        minMarginMs,
                        expiredTakenBack));
        report.assertClean();
        assertThat(report.delivered()).isEqualTo(MESSAGES);
        assertThat(minMarginMs)
                .as("earliest arrival minus due time (one host clock)")
                .isNotNegative();
        assertThat(duplicatedElsewhere.size())
                .as(
                        "duplicated bodies the killed relay did not hold in flight (first: %s)",
                        duplicatedElsewhere.stream().limit(5).toList())
                .isLessThanOrEqualTo((int) retried);
        assertThat(aheadOfDeathTwice)
                .as("entries the killed relay held that fell due after it was gone, delivered more than once")
                .isEmpty();
        assertThat(expiredTakenBack)
                .as("leases the survivor took back as expired (its log): the killed relay's, plus any of its own after"
                        + " a confirm timeout")
                .isBetween((long) killedHeld.size(), killedHeld.size() + retried);
        assertThat(heldNotRetried)
                .as("entries the killed relay held, delivered again after the kill (their lease expired)")
                .isEmpty();
        assertThat(worstPickupMs)
                .as("entries held up by the kill arrived within lease + retry delay + margin")
                .isLessThanOrEqualTo(TAKE_OVER.toMillis());
        assertThat(killedRetriedWithinMs)
                .as("the killed relay's in-flight entries retried by the survivor within the bound")
                .isLessThanOrEqualTo(TAKE_OVER.toMillis());
        assertThat(kit.scheduled(business)).isZero();
        assertThat(survivor.isAlive())
                .as("survivor alive; see %s", survivor.log())
                .isTrue();
    }

    /** One in-flight delivery's record in {@code {K:i}:attempts}: "failed:original due:lease token". */
    record Lease(String member, int failed, long originalDueMs, String token) {
        /** The relay's token prefix (per ShardStore, so per relay process); empty while it waits for a retry. */
        String prefix() {
            int dash = token.lastIndexOf('-');
            return dash < 0 ? token : token.substring(0, dash);
        }
    }

    /** Every in-flight record of the business, read after one Redis TIME. */
    record Leases(long redisNowMs, Map<String, Lease> byMember) {
        Set<String> tokens() {
            Set<String> tokens = new HashSet<>();
            byMember.values().forEach(l -> tokens.add(l.token()));
            return tokens;
        }

        /** Leased (token set) entries whose original due time is after {@code afterMs}, per token prefix. */
        Map<String, Integer> aheadByPrefix(long afterMs) {
            Map<String, Integer> ahead = new TreeMap<>();
            for (Lease l : byMember.values()) {
                if (!l.token().isEmpty() && l.originalDueMs() > afterMs) {
                    ahead.merge(l.prefix(), 1, Integer::sum);
                }
            }
            return ahead;
        }

        Map<String, Lease> heldBy(String prefix) {
            Map<String, Lease> held = new LinkedHashMap<>();
            byMember.forEach((m, l) -> {
                if (!l.token().isEmpty() && l.prefix().equals(prefix)) {
                    held.put(m, l);
                }
            });
            return held;
        }
    }

    private Leases leases(DelayQueueKeys keys) {
        Map<String, Lease> byMember = new HashMap<>();
        long now;
        try (RedisConnection c = kit.redis()) {
            now = c.serverCommands().time();
            for (int s = 0; s < SHARDS; s++) {
                Map<byte[], byte[]> records = c.hashCommands().hGetAll(DelayQueueKeys.bytes(keys.attempts(s)));
                if (records == null) {
                    continue;
                }
                records.forEach((m, r) -> {
                    String member = new String(m, StandardCharsets.UTF_8);
                    String[] parts = new String(r, StandardCharsets.UTF_8).split(":", 3);
                    if (parts.length == 3 && !parts[1].isEmpty()) {
                        byMember.put(
                                member,
                                new Lease(member, Integer.parseInt(parts[0]), Long.parseLong(parts[1]), parts[2]));
                    }
                });
            }
        }
        return new Leases(now, byMember);
    }

    /** Writes the entries straight into the shards (pipelined plain ZADD), due over SPREAD_MS from FIRST_DUE_MS on. */
    private List<String> seed(DelayQueueKeys keys, Map<String, Long> due) {
        long start = kit.redisNowMs() + FIRST_DUE_MS;
        List<String> sent = new ArrayList<>(MESSAGES);
        Map<Integer, Set<Tuple>> byShard = new TreeMap<>();
        for (int i = 0; i < MESSAGES; i++) {
            long at = start + i * SPREAD_MS / MESSAGES;
            String body = "lk-" + i + "-" + at;
            sent.add(body);
            due.put(body, at);
            byte[] member = body.getBytes(StandardCharsets.UTF_8);
            byShard.computeIfAbsent(ShardSelector.shardOf(member, SHARDS), s -> new HashSet<>())
                    .add(new DefaultTuple(member, (double) at));
        }
        try (RedisConnection c = kit.redis()) {
            c.openPipeline();
            byShard.forEach((shard, tuples) -> c.zSetCommands().zAdd(DelayQueueKeys.bytes(keys.shard(shard)), tuples));
            c.closePipeline();
        }
        assertThat(kit.redisNowMs()).as("written before the first due time").isLessThan(start);
        return sent;
    }

    /** The survivor's "N entries' lease expired unconfirmed" lines (EventReporter), summed. */
    private static long leasesExpired(String log) {
        Matcher m = LEASE_EXPIRED.matcher(log);
        long total = 0;
        while (m.find()) {
            total += Long.parseLong(m.group(1));
        }
        return total;
    }

    private static final Pattern LEASE_EXPIRED = Pattern.compile("([0-9]+) entries' lease expired unconfirmed");

    /** The due time the body carries: "lk-&lt;i&gt;-&lt;due ms&gt;". */
    private static long dueInBody(String body) {
        return Long.parseLong(body.substring(body.lastIndexOf('-') + 1));
    }

    private Map<String, String> seats(DelayQueueKeys keys) {
        Map<String, String> seats = new TreeMap<>();
        try (RedisConnection c = kit.redis()) {
            Map<byte[], byte[]> raw = c.hashCommands().hGetAll(DelayQueueKeys.bytes(keys.seats()));
            if (raw != null) {
                raw.forEach((k, v) ->
                        seats.put(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
            }
        }
        return seats;
    }

    /** Waits until every seat was renewed after {@code sinceMs} (Redis time): each deadline past it + the TTL. */
    private void awaitEveryoneRenewedSince(DelayQueueKeys keys, long sinceMs) {
        await("every seat renewed since " + sinceMs)
                .atMost(SEAT_TTL.plusSeconds(10))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> seats(keys).values().stream()
                        .mapToLong(v -> Long.parseLong(v.substring(v.indexOf(':') + 1)))
                        .allMatch(deadline -> deadline > sinceMs + SEAT_TTL.toMillis()));
    }

    private static Map<String, Object> properties(String business, String exchange, String name) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.data.redis.host", TestServices.redis().host());
        p.put("spring.data.redis.port", TestServices.redis().port());
        p.put("spring.data.redis.client-name", "leadkill-" + business + "-" + name);
        p.put("spring.rabbitmq.host", TestServices.rabbit().host());
        p.put("spring.rabbitmq.port", TestServices.rabbit().port());
        p.put("relay.reaper-interval", "500ms");
        p.put("relay.division.seat-ttl", SEAT_TTL.toMillis() + "ms");
        String b = "relay.businesses." + business + ".";
        p.put(b + "exchange", exchange);
        p.put(b + "routing-key", "due");
        p.put(b + "shards", SHARDS);
        p.put(b + "threads", THREADS);
        p.put(b + "lead", LEAD.toMillis() + "ms");
        p.put(b + "lease", LEASE.toMillis() + "ms");
        p.put(b + "publish-timeout", PUBLISH_TIMEOUT.toMillis() + "ms");
        p.put(b + "retry-delay", RETRY_DELAY.toMillis() + "ms");
        return p;
    }
}
