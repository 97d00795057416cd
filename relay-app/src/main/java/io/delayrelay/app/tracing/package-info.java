/**
 * Optional tracing of the relay's publishes (OpenTelemetry API, present only when the application has it): each
 * publish of a message carrying a producer's {@code traceparent} is a span linked to the producer's span.
 */
package io.delayrelay.app.tracing;
