package io.delayrelay.app.tracing;

import java.util.Map;

import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.engine.PublishTracing;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.DueMessage;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Each publish attempt of a message carrying a producer's {@code traceparent} is a PRODUCER span, a root span
 * LINKED to the producer's span context (not its child: the message waited minutes or days, and a retry is not part
 * of the first attempt either, so every attempt links the producer's context and none has a parent). The span
 * starts as the message is written to the channel and ends when the broker has answered for its batch, with the
 * message's own outcome (confirm, return, nack, timeout);
 * it carries the business, shard, attempt, due time and message id. The message's headers are published unchanged:
 * the consumer continues the producer's trace, as it would without the relay.
 */
public final class OpenTelemetryPublishTracing implements PublishTracing {

    private static final Logger log = LoggerFactory.getLogger(OpenTelemetryPublishTracing.class);

    /** The instrumentation scope of the relay's spans. */
    public static final String SCOPE = "io.delayrelay.relay";

    static final AttributeKey<String> MESSAGING_SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> OPERATION = AttributeKey.stringKey("messaging.operation.name");
    static final AttributeKey<String> OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
    static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> ROUTING_KEY =
            AttributeKey.stringKey("messaging.rabbitmq.destination.routing_key");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    public static final AttributeKey<String> BUSINESS = AttributeKey.stringKey("delay_relay.business");
    public static final AttributeKey<Long> SHARD = AttributeKey.longKey("delay_relay.shard");
    public static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("delay_relay.attempt");
    public static final AttributeKey<Long> DUE_AT = AttributeKey.longKey("delay_relay.due_at_ms");
    public static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("delay_relay.outcome");

    private static final TextMapGetter<Map<String, String>> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private final Tracer tracer;

    public OpenTelemetryPublishTracing(OpenTelemetry openTelemetry) {
        this.tracer = openTelemetry.getTracer(SCOPE);
    }

    @Override
    public PublishSpan start(BusinessSpec spec, DueMessage message, String routingKey) {
        Map<String, String> headers = message.headers();
        if (!headers.containsKey("traceparent")) {
            return null;
        }
        SpanContext producer = Span.fromContext(
                        W3CTraceContextPropagator.getInstance().extract(Context.root(), headers, HEADERS))
                .getSpanContext();
        if (!producer.isValid()) {
            // published unchanged all the same; only the relay's span is missing
            log.debug(
                    "business={} shard={}: traceparent '{}' of {} is not a valid W3C trace context; publish not traced",
                    spec.name(),
                    message.shard(),
                    headers.get("traceparent"),
                    message.messageId());
            return null;
        }
        Span span = tracer.spanBuilder("publish " + spec.route().exchange())
                .setSpanKind(SpanKind.PRODUCER)
                .setNoParent()
                .addLink(producer)
                .setAttribute(MESSAGING_SYSTEM, "rabbitmq")
                .setAttribute(OPERATION, "publish")
                .setAttribute(OPERATION_TYPE, "send")
                .setAttribute(DESTINATION, spec.route().exchange())
                .setAttribute(ROUTING_KEY, routingKey)
                .setAttribute(MESSAGE_ID, message.messageId())
                .setAttribute(BUSINESS, message.business())
                .setAttribute(SHARD, (long) message.shard())
                .setAttribute(ATTEMPT, (long) message.attempt())
                .setAttribute(DUE_AT, message.dueAtMs())
                .startSpan();
        return outcome -> {
            span.setAttribute(OUTCOME, outcome.status().name().toLowerCase(java.util.Locale.ROOT));
            if (outcome.status() != PublishOutcome.Status.CONFIRMED) {
                span.setStatus(
                        StatusCode.ERROR,
                        outcome.cause().tag() + (outcome.reason() == null ? "" : ": " + outcome.reason()));
            }
            span.end();
        };
    }
}
