/**
 * The engine's RabbitMQ adapter: {@link io.delayrelay.app.engine.amqp.AmqpBatchPublisher} implements the loop's
 * {@link io.delayrelay.app.engine.BatchPublisher} port with amqp-client channels and publisher confirms. Everything
 * else here (the channel that books confirms, the pending batch, the message builder) is package-private: the loop
 * sees only batches in and outcomes out.
 */
package io.delayrelay.app.engine.amqp;
