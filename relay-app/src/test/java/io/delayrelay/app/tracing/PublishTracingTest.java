package io.delayrelay.app.tracing;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ScheduleOptions;
import io.delayrelay.app.engine.PublishTracing;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay's publish of a message carrying a producer's trace context is an OpenTelemetry span LINKED to the
 * producer's span (against the real Redis and RabbitMQ, spans read from the SDK's in-memory exporter): the producer
 * schedules inside its span through relay-api, which adds the traceparent; the first attempt fails (the exchange is
 * gone), the retry succeeds once it is back; each attempt is a root PRODUCER span linking the producer's trace id
 * and span id, neither a child of the producer nor of the first attempt, with business, shard and attempt. A
 * message without a trace context is not traced.
 */
class PublishTracingTest {

    private static final InMemorySpanExporter EXPORTER = InMemorySpanExporter.create();
    private static final OpenTelemetrySdk SDK = OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(EXPORTER))
                    .build())
            .build();

    /** What Spring Boot's OpenTelemetry starter gives an application: an {@link OpenTelemetry} bean. */
    @Configuration(proxyBeanMethods = false)
    static class Tracing {
        @Bean
        OpenTelemetry openTelemetry() {
            return SDK;
        }
    }

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
        EXPORTER.reset();
    }

    @Test
    void everyPublishAttemptIsASpanLinkedToTheProducersSpan() throws Exception {
        EXPORTER.reset();
        String business = kit.business("traced");
        String exchange = kit.exchange("traced");
        String queue = kit.queue(exchange, "due");
        BlockingQueue<Received> inbox = kit.consume(queue);
        ConfigurableApplicationContext relay = kit.startRelay(
                RelayTestKit.business(
                        kit.baseProperties(), business, exchange, "due", "retry-delay", "3s", "threads", 1),
                Tracing.class);
        assertThat(relay.getBean(PublishTracing.class)).isInstanceOf(OpenTelemetryPublishTracing.class);
        // the first attempt finds no exchange (the broker closes the channel: failed, retried after 3 s)
        kit.channel().exchangeDelete(exchange);

        Span producer =
                SDK.getTracer("test-producer").spanBuilder("place order").startSpan();
        try (Scope ignored = producer.makeCurrent()) {
            kit.producer()
                    .scheduleByIdAfter(
                            business,
                            "order-9",
                            "cancel if unpaid".getBytes(StandardCharsets.UTF_8),
                            Duration.ZERO,
                            ScheduleOptions.create());
        } finally {
            producer.end();
        }
        SpanContext produced = producer.getSpanContext();
        String traceparent = "00-" + produced.getTraceId() + "-" + produced.getSpanId() + "-01";

        await().atMost(Duration.ofSeconds(10)).until(() -> relaySpans().size() == 1);
        kit.channel().exchangeDeclare(exchange, "direct", false, false, null);
        kit.channel().queueBind(queue, exchange, "due");
        kit.producer().scheduleAfter(business, "no trace context", Duration.ZERO);

        List<Received> all = RelayTestKit.collect(inbox, 2, Duration.ofSeconds(20), Duration.ofMillis(1500));
        assertThat(all).extracting(Received::text).containsExactlyInAnyOrder("cancel if unpaid", "no trace context");
        Received order = all.stream()
                .filter(r -> r.text().equals("cancel if unpaid"))
                .findFirst()
                .orElseThrow();
        assertThat(order.headers())
                .as("published unchanged: the consumer continues the producer's trace")
                .containsEntry("traceparent", traceparent)
                .containsEntry(RelayHeaders.ATTEMPT, 2);
        assertThat(order.header(RelayHeaders.RELAYED_AT)).isGreaterThanOrEqualTo(order.header(RelayHeaders.DUE_AT));

        await().atMost(Duration.ofSeconds(5)).until(() -> relaySpans().size() == 2);
        List<SpanData> spans = relaySpans().stream()
                .sorted(Comparator.comparingLong(s -> s.getAttributes().get(OpenTelemetryPublishTracing.ATTEMPT)))
                .toList();
        assertThat(spans).hasSize(2); // the message without a trace context is not traced
        int shard = io.delayrelay.api.ShardSelector.shardOf("order-9".getBytes(StandardCharsets.UTF_8), 16);
        for (int i = 0; i < 2; i++) {
            SpanData span = spans.get(i);
            assertThat(span.getName()).isEqualTo("publish " + exchange);
            assertThat(span.getKind()).isEqualTo(SpanKind.PRODUCER);
            assertThat(span.getParentSpanContext().isValid())
                    .as("attempt %d is a root span: linked, not a child", i + 1)
                    .isFalse();
            assertThat(span.getLinks()).hasSize(1);
            LinkData link = span.getLinks().get(0);
            assertThat(link.getSpanContext().getTraceId()).isEqualTo(produced.getTraceId());
            assertThat(link.getSpanContext().getSpanId()).isEqualTo(produced.getSpanId());
            assertThat(link.getSpanContext().isRemote()).isTrue();
            assertThat(span.getAttributes().get(OpenTelemetryPublishTracing.BUSINESS))
                    .isEqualTo(business);
            assertThat(span.getAttributes().get(OpenTelemetryPublishTracing.SHARD))
                    .isEqualTo(shard);
            assertThat(span.getAttributes().get(OpenTelemetryPublishTracing.ATTEMPT))
                    .isEqualTo(i + 1L);
            assertThat(span.getTraceId()).isNotEqualTo(produced.getTraceId());
        }
        SpanData first = spans.get(0);
        SpanData retry = spans.get(1);
        assertThat(first.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(first.getStatus().getDescription()).startsWith("exchange-not-found");
        assertThat(first.getAttributes().get(OpenTelemetryPublishTracing.OUTCOME))
                .isEqualTo("failed");
        assertThat(retry.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
        assertThat(retry.getAttributes().get(OpenTelemetryPublishTracing.OUTCOME))
                .isEqualTo("confirmed");
        assertThat(retry.getTraceId())
                .as("the retry is not a child of the first attempt")
                .isNotEqualTo(first.getTraceId());
        assertThat(retry.getStartEpochNanos()).isGreaterThanOrEqualTo(first.getEndEpochNanos());
    }

    @Test
    void withoutAnOpenTelemetryBeanNothingIsTraced() {
        String business = kit.business("untraced");
        String exchange = kit.exchange("untraced");
        ConfigurableApplicationContext relay =
                kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, exchange, "due"));
        assertThat(relay.getBean(PublishTracing.class)).isSameAs(PublishTracing.NONE);
    }

    private static List<SpanData> relaySpans() {
        return EXPORTER.getFinishedSpanItems().stream()
                .filter(s -> s.getInstrumentationScopeInfo().getName().equals(OpenTelemetryPublishTracing.SCOPE))
                .toList();
    }
}
