/**
 * AMQP intakes: publishers that used RabbitMQ's delayed-message plugin publish to an intake exchange with an
 * {@code x-delay} header; {@link io.delayrelay.app.intake.Intakes} consumes the intake queues, writes each message
 * whole to its business's shards by id, and the engine publishes it when due to the intake's deliver-to exchange.
 */
package io.delayrelay.app.intake;
