package io.delayrelay.app.ops;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.delayrelay.app.engine.ShardDivision;
import io.delayrelay.app.fleet.PauseState;
import io.delayrelay.app.fleet.RelayInstance;
import io.delayrelay.app.metrics.Backlog;
import io.delayrelay.app.ops.DeadLetters.DeadLetter;
import io.delayrelay.app.ops.DeadLetters.Entry;
import io.delayrelay.app.trigger.BusinessSpec;
import org.jspecify.annotations.Nullable;

/**
 * What the {@code relay} endpoint answers, as records: the JSON shape is the record's, in one place, and the
 * console reads exactly these fields. Listings carry {@link AuditRef#of a member's reference} next to the member,
 * the same reference the audit lines print in place of the member.
 */
final class OpsViews {

    private OpsViews() {}

    /** An error answer: {@code {"status": 400, "error": "..."}}. */
    record Failure(int status, String error) {}

    /**
     * {@code GET /actuator/relay}: every business. {@code writeEnabled}: an operator token is configured (listings
     * and writes are possible); {@code operator}: the name of the operator whose token the request carried, else
     * null.
     */
    record Overview(
            boolean running, boolean writeEnabled, @Nullable String operator, Map<String, BusinessView> businesses) {}

    /** One business: configuration in force, pause, shards, backlog and live instances. */
    record BusinessView(
            String name,
            boolean running,
            boolean paused,
            PauseView pause,
            int shards,
            int scanWidth,
            DivisionView division,
            ConfigView config,
            @Nullable Map<String, Object> local,
            Object backlog,
            List<InstanceView> instances) {}

    /**
     * This instance's share of the shards in the fleet's division: its name in {@code {K:cursor}:seats}, the seat it
     * drew, its rank among the live seats, and the shards it pops (every one when {@code of} is 1; a share replaced
     * within the hand-over overlap included); {@code givenUp}: why it gave its seat up (it pops nothing), else null.
     */
    record DivisionView(String holder, long seat, int rank, int of, List<Integer> shards, @Nullable String givenUp) {
        static DivisionView of(ShardDivision division, int width) {
            ShardDivision.Share share = division.effective();
            List<Integer> owned = new ArrayList<>();
            for (int shard = 0; shard < width; shard++) {
                if (division.owns(shard)) {
                    owned.add(shard);
                }
            }
            return new DivisionView(
                    division.holder(), share.seat(), share.rank(), share.of(), owned, division.givenUp());
        }
    }

    /** Why a business is paused: configuration, an operator (who and when, epoch ms). */
    record PauseView(boolean config, boolean operator, @Nullable String by, @Nullable Long at) {
        static PauseView of(PauseState pause, boolean operatorPaused) {
            return new PauseView(
                    pause.config(),
                    operatorPaused,
                    pause.operator().by(),
                    pause.operator().at());
        }
    }

    /**
     * A business's settings in force; {@code maxRate} 0: no rate cap; {@code sloOnTimeMs} and {@code sloTarget}: the
     * on-time objective (the console reads the on-time share from the lag histogram's bucket at sloOnTimeMs).
     */
    record ConfigView(
            String sourceKey,
            String exchange,
            String routingKey,
            String exchangeType,
            boolean declareExchange,
            int threads,
            String threadNamePrefix,
            int batchSize,
            long batchBytes,
            String maxIdle,
            String lease,
            int maxAttempts,
            String retryDelay,
            String retryDelayMax,
            String publishTimeout,
            int maxRate,
            long sloOnTimeMs,
            double sloTarget) {
        static ConfigView of(BusinessSpec spec) {
            return new ConfigView(
                    spec.keys().sourceKey(),
                    spec.route().exchange(),
                    spec.route().routingKey(),
                    spec.route().type(),
                    spec.route().declare(),
                    spec.threads(),
                    spec.threadNamePrefix(),
                    spec.batch().size(),
                    spec.batch().bytes(),
                    spec.timing().maxIdle().toString(),
                    spec.timing().lease().toString(),
                    spec.retry().maxAttempts(),
                    spec.retry().delay().toString(),
                    spec.retry().delayMax().toString(),
                    spec.timing().publishTimeout().toString(),
                    spec.maxRate(),
                    spec.slo().onTime().toMillis(),
                    spec.slo().target());
        }
    }

    /**
     * A backlog reading: counts by state ({@code cold}: live entries of the cold tier), how overdue the oldest due
     * entry is, when it was read (Redis time, epoch ms), and whether it is the fleet's shared sample
     * ({@code K:backlog}) or was read just now.
     */
    record BacklogView(
            long due,
            long scheduled,
            long inflight,
            long dead,
            long cold,
            long oldestOverdueMs,
            long atMs,
            String source) {
        static BacklogView of(Backlog b, String source) {
            return new BacklogView(
                    b.due(), b.scheduled(), b.inflight(), b.dead(), b.cold(), b.oldestOverdueMs(), b.atMs(), source);
        }
    }

    /** The backlog could not be read. */
    record BacklogError(String error) {}

    /** A live relay instance. */
    record InstanceView(String id, String host, String version, long startedAt, long lastSeen, String seat) {
        static InstanceView of(RelayInstance i) {
            return new InstanceView(i.id(), i.host(), i.version(), i.startedAt(), i.lastSeen(), i.seat());
        }
    }

    /**
     * A scheduled entry; {@code payload} is the preview of what is stored under its id (null: the member is the
     * message); {@code cold}: it waits in the cold tier (a compressed block, docs/cold-tier.md), not in its shard zset.
     */
    record EntryView(
            int shard, String ref, String member, long dueAtMs, Instant dueAt, @Nullable String payload, boolean cold) {
        static EntryView of(Entry e, @Nullable String payload) {
            return new EntryView(
                    e.shard(), AuditRef.of(e.member()), e.member(), e.dueAtMs(), e.dueAt(), payload, false);
        }

        static EntryView of(ColdEntries.Cold c) {
            Entry e = c.entry();
            String payload = c.payload() == null ? null : ScheduledEntries.preview(c.payload());
            return new EntryView(e.shard(), AuditRef.of(e.member()), e.member(), e.dueAtMs(), e.dueAt(), payload, true);
        }
    }

    /** A dead letter: why, after how many attempts, when it was originally due and when it died. */
    record DeadLetterView(
            int shard,
            String ref,
            String member,
            @Nullable String reason,
            @Nullable Integer attempts,
            @Nullable Long originalDueMs,
            @Nullable Instant originalDueAt,
            long deadAtMs,
            Instant deadAt,
            @Nullable String payload) {
        static DeadLetterView of(DeadLetter d, @Nullable String payload) {
            Long due = DeadLetters.originalDueMs(d.reason());
            return new DeadLetterView(
                    d.shard(),
                    AuditRef.of(d.member()),
                    d.member(),
                    d.reason(),
                    DeadLetters.attempts(d.reason()),
                    due,
                    due == null ? null : Instant.ofEpochMilli(due),
                    d.deadAtMs(),
                    d.deadAt(),
                    payload);
        }
    }

    /**
     * The next scheduled entries. {@code partial}: the search or listing stopped at its bound (entries read, bytes
     * or time) before it had looked at everything; narrow the search.
     */
    record EntryListing(String business, int count, boolean bodies, boolean partial, List<EntryView> entries) {}

    /** The oldest dead letters; {@code partial} as in {@link EntryListing}. */
    record DeadLetterListing(
            String business, int count, boolean bodies, boolean partial, List<DeadLetterView> deadLetters) {}

    /** What a write did: one of the counts is set. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Done(
            String business,
            @Nullable Long replayed,
            @Nullable Long purged,
            @Nullable Long cancelled,
            @Nullable Long dueNow) {
        static Done replayed(String business, long n) {
            return new Done(business, n, null, null, null);
        }

        static Done purged(String business, long n) {
            return new Done(business, null, n, null, null);
        }

        static Done cancelled(String business, long n) {
            return new Done(business, null, null, n, null);
        }

        static Done dueNow(String business, long n) {
            return new Done(business, null, null, null, n);
        }
    }
}
