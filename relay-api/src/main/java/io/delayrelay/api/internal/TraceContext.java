package io.delayrelay.api.internal;

import java.util.LinkedHashMap;
import java.util.Map;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;

/**
 * The current W3C trace context, when OpenTelemetry's API is on the classpath (an optional dependency: without it,
 * or without a valid current span, there is none). Not API.
 */
public final class TraceContext {

    public static final String TRACEPARENT = "traceparent";
    public static final String TRACESTATE = "tracestate";

    private static final boolean PRESENT = present();

    private TraceContext() {}

    /** {@code traceparent} (and {@code tracestate} when not empty) of the current span; empty when none. */
    public static Map<String, String> current() {
        if (!PRESENT) {
            return Map.of();
        }
        return Otel.current();
    }

    private static boolean present() {
        try {
            Class.forName("io.opentelemetry.api.trace.Span", false, TraceContext.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Touches OpenTelemetry's classes only when they are present. */
    private static final class Otel {
        static Map<String, String> current() {
            SpanContext context = Span.current().getSpanContext();
            if (!context.isValid()) {
                return Map.of();
            }
            Map<String, String> headers = new LinkedHashMap<>();
            headers.put(
                    TRACEPARENT,
                    "00-" + context.getTraceId() + "-" + context.getSpanId() + "-"
                            + context.getTraceFlags().asHex());
            StringBuilder state = new StringBuilder();
            context.getTraceState().forEach((key, value) -> state.append(state.length() == 0 ? "" : ",")
                    .append(key)
                    .append('=')
                    .append(value));
            if (state.length() > 0) {
                headers.put(TRACESTATE, state.toString());
            }
            return headers;
        }
    }
}
