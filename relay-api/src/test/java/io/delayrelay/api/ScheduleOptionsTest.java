package io.delayrelay.api;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Per-message options of contract v2 through relay-api against a real Redis: the exact envelope schedule.lua
 * stores, the refusals (a relay header, in Java and in the script; an expiry before the due time; options without a
 * message), a v1 call and a message that looks like an envelope, and the current OpenTelemetry span's traceparent
 * and tracestate added unless the options set them; a reschedule after the entry's expiry refused.
 */
class ScheduleOptionsTest {

    private static final long DUE = 1_900_000_000_000L;

    private final String business =
            "options-test-" + UUID.randomUUID().toString().substring(0, 8);
    private final DelayQueueKeys keys = DelayQueueKeys.forBusiness(business);
    private LettuceConnectionFactory factory;
    private RedisDelayedMessageProducer producer;

    @BeforeEach
    void connect() {
        factory = LocalRedis.connect();
        producer = new RedisDelayedMessageProducer(factory, 16, Duration.ZERO, DelayQueueKeys::forBusiness);
    }

    @AfterEach
    void cleanUp() {
        try (RedisConnection c = factory.getConnection()) {
            for (int i = 0; i < 16; i++) {
                c.keyCommands().del(b(keys.shard(i)), b(keys.payloads(i)));
            }
        }
        factory.destroy();
    }

    @Test
    void theEnvelopeHoldsTheExpiryTheHeadersInOrderAndTheMessage() {
        producer.scheduleById(
                business,
                "order-1",
                b("{\"n\":1}"),
                Instant.ofEpochMilli(DUE),
                ScheduleOptions.create()
                        .expiresAfterDue(Duration.ofSeconds(5))
                        .header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                        .header("tenant", "acmé"));
        assertThat(payload("order-1"))
                .isEqualTo(envelope("DR2:" + (DUE + 5_000)
                        + ":2:11:traceparent55:00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
                        + "6:tenant5:acmé{\"n\":1}"));

        producer.scheduleById(
                business,
                "order-2",
                b("m"),
                Instant.ofEpochMilli(DUE),
                ScheduleOptions.create().expiresAt(Instant.ofEpochMilli(DUE + 1)));
        assertThat(payload("order-2")).isEqualTo(envelope("DR2:" + (DUE + 1) + ":0:m"));
    }

    @Test
    void withoutOptionsAMessageIsStoredAsInV1AndOneThatLooksLikeAnEnvelopeIsWrapped() {
        producer.scheduleById(business, "plain", b("as before"), Instant.ofEpochMilli(DUE));
        assertThat(payload("plain")).isEqualTo(b("as before"));
        byte[] lookalike = envelope("DR2:5:0:not options");
        producer.scheduleById(business, "lookalike", lookalike, Instant.ofEpochMilli(DUE));
        byte[] wrapped = envelope("DR2::0:");
        byte[] expected = new byte[wrapped.length + lookalike.length];
        System.arraycopy(wrapped, 0, expected, 0, wrapped.length);
        System.arraycopy(lookalike, 0, expected, wrapped.length, lookalike.length);
        assertThat(payload("lookalike")).isEqualTo(expected);
    }

    @Test
    void aRelayHeaderAnExpiryBeforeTheDueTimeAndOptionsWithoutAMessageAreRefused() {
        assertThatThrownBy(() -> ScheduleOptions.create().header("X-Delay-Attempt", "1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("X-Delay-Attempt is refused");
        assertThatThrownBy(() -> producer.scheduleById(
                        business,
                        "early",
                        b("m"),
                        Instant.ofEpochMilli(DUE),
                        ScheduleOptions.create().expiresAt(Instant.ofEpochMilli(DUE - 1))))
                .hasRootCauseMessage("ERR delay-relay schedule.lua: ARGV[7] (expiry) " + (DUE - 1)
                        + " is before the due time " + DUE);
        int shard = ShardSelector.shardOf("raw", 16);
        assertThatThrownBy(() -> raw(shard, "raw", "m", "", "x-delay-business", "other"))
                .rootCause()
                .hasMessageContaining("header x-delay-business is refused");
        assertThatThrownBy(() -> raw(shard, "raw", "m", "", "tenant"))
                .rootCause()
                .hasMessageContaining("must be name, value pairs");
        assertThatThrownBy(() -> raw(shard, "raw", "m", "soon"))
                .rootCause()
                .hasMessageContaining("ARGV[7] (expiry) must be");
        assertThat(payload("raw")).as("nothing written").isNull();
        assertThat(payload("early")).isNull();
    }

    /**
     * Engine review 2026-11-28, finding 5: reschedule.lua moved an entry past its own expiry, and the relay then
     * published it after the expiry without a word. Now it is refused like an expiry before the due time at
     * schedule: up to the expiry is fine, one ms after it is not, and nothing changes.
     */
    @Test
    void aRescheduleAfterTheEntrysExpiryIsRefusedNamingIdDueTimeAndExpiry() {
        long expiry = DUE + 1_000;
        producer.scheduleById(
                business,
                "expiring",
                b("m"),
                Instant.ofEpochMilli(DUE),
                ScheduleOptions.create().expiresAfterDue(Duration.ofSeconds(1)));

        assertThat(producer.rescheduleById(business, "expiring", Instant.ofEpochMilli(expiry)))
                .as("at the expiry itself")
                .isTrue();
        assertThatThrownBy(() -> producer.rescheduleById(business, "expiring", Instant.ofEpochMilli(expiry + 1)))
                .isInstanceOfSatisfying(RescheduleAfterExpiryException.class, e -> {
                    assertThat(e.id()).isEqualTo("expiring");
                    assertThat(e.dueAtMs()).isEqualTo(expiry + 1);
                    assertThat(e.expiryMs()).isEqualTo(expiry);
                })
                .hasMessage("reschedule of id 'expiring' (business '" + business + "') to " + (expiry + 1)
                        + " refused: it is after the entry's expiry " + expiry
                        + " (schedule the id again to give it a later expiry or none)");
        assertThat(score("expiring")).as("unchanged").isEqualTo((double) expiry);

        int shard = ShardSelector.shardOf("expiring", 16);
        assertThatThrownBy(() -> rawReschedule(shard, "expiring", "after", "1000000000000"))
                .rootCause()
                .hasMessageStartingWith("EXPIRY delay-relay reschedule.lua: the due time ")
                .hasMessageEndingWith(" is after the entry's expiry " + expiry);
        assertThat(score("expiring")).isEqualTo((double) expiry);

        producer.scheduleById(business, "no-expiry", b("m"), Instant.ofEpochMilli(DUE));
        assertThat(producer.rescheduleById(business, "no-expiry", Instant.ofEpochMilli(DUE + 86_400_000)))
                .as("an entry without an expiry moves anywhere")
                .isTrue();
    }

    @Test
    void theCurrentSpansTraceContextIsAddedUnlessTheOptionsSetIt() {
        SdkTracerProvider tracing = SdkTracerProvider.builder().build();
        Span span = tracing.get("test")
                .spanBuilder("checkout")
                .setParent(io.opentelemetry.context.Context.root()
                        .with(Span.wrap(io.opentelemetry.api.trace.SpanContext.create(
                                "0af7651916cd43dd8448eb211c80319c",
                                "b7ad6b7169203331",
                                io.opentelemetry.api.trace.TraceFlags.getSampled(),
                                TraceState.builder().put("congo", "t61rcWkgMzE").build()))))
                .startSpan();
        try (Scope ignored = span.makeCurrent()) {
            producer.scheduleById(business, "traced", b("m"), Instant.ofEpochMilli(DUE), ScheduleOptions.create());
            producer.scheduleById(
                    business,
                    "own",
                    b("m"),
                    Instant.ofEpochMilli(DUE),
                    ScheduleOptions.create().header("traceparent", "mine"));
        } finally {
            span.end();
            tracing.close();
        }
        String traceparent =
                "00-0af7651916cd43dd8448eb211c80319c-" + span.getSpanContext().getSpanId() + "-01";
        assertThat(payload("traced"))
                .isEqualTo(envelope("DR2::2:11:traceparent55:" + traceparent + "10:tracestate17:congo=t61rcWkgMzEm"));
        assertThat(payload("own"))
                .as("the caller's own header wins; tracestate still added")
                .isEqualTo(envelope("DR2::2:11:traceparent4:mine10:tracestate17:congo=t61rcWkgMzEm"));

        producer.scheduleById(business, "untraced", b("m"), Instant.ofEpochMilli(DUE), ScheduleOptions.create());
        assertThat(payload("untraced"))
                .as("no current span: no options, stored as in v1")
                .isEqualTo(b("m"));
    }

    private void raw(int shard, String member, String message, String... options) {
        List<byte[]> args = new ArrayList<>(List.of(
                b(member), b("at"), b(Long.toString(DUE)), b(keys.wake()), b(Integer.toString(shard)), b(message)));
        for (String o : options) {
            args.add(b(o));
        }
        try (RedisConnection c = factory.getConnection()) {
            List<byte[]> k = ProducerScripts.keys(keys, shard);
            byte[][] all = new byte[k.size() + args.size()][];
            for (int i = 0; i < k.size(); i++) {
                all[i] = k.get(i);
            }
            for (int i = 0; i < args.size(); i++) {
                all[k.size() + i] = args.get(i);
            }
            c.scriptingCommands()
                    .eval(
                            b(ProducerScripts.SCHEDULE.getScriptAsString()),
                            org.springframework.data.redis.connection.ReturnType.INTEGER,
                            k.size(),
                            all);
        }
    }

    private Object rawReschedule(int shard, String member, String mode, String ms) {
        List<byte[]> k = ProducerScripts.keys(keys, shard);
        List<byte[]> all = new ArrayList<>(k);
        all.addAll(List.of(b(member), b(mode), b(ms), b(keys.wake()), b(Integer.toString(shard))));
        try (RedisConnection c = factory.getConnection()) {
            return c.scriptingCommands()
                    .eval(
                            b(ProducerScripts.RESCHEDULE.getScriptAsString()),
                            org.springframework.data.redis.connection.ReturnType.INTEGER,
                            k.size(),
                            all.toArray(new byte[0][]));
        }
    }

    private Double score(String id) {
        try (RedisConnection c = factory.getConnection()) {
            return c.zSetCommands().zScore(b(keys.shard(ShardSelector.shardOf(id, 16))), b(id));
        }
    }

    private byte[] payload(String id) {
        try (RedisConnection c = factory.getConnection()) {
            return c.hashCommands().hGet(b(keys.payloads(ShardSelector.shardOf(id, 16))), b(id));
        }
    }

    private static byte[] envelope(String afterMarker) {
        byte[] rest = b(afterMarker);
        byte[] out = new byte[rest.length + 1];
        out[0] = (byte) 0xFF;
        System.arraycopy(rest, 0, out, 1, rest.length);
        return out;
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
