/**
 * The relay engine: per business, worker threads that pop due entries with Lua, publish them with confirms and
 * settle the outcome.
 * <p>
 * Read in this order: {@link io.delayrelay.app.engine.PopWorker} (the loop) → {@link
 * io.delayrelay.app.engine.PopStrategy} (how a round is chosen: {@code LingeredRounds} or {@code ShardAtATime}) →
 * {@code ShardStore.pop} (pop.lua) → {@link io.delayrelay.app.engine.BatchSettler} (publish and settle; pop-ahead
 * waves in {@code AheadDelivery}) → {@code amqp.AmqpBatchPublisher} → {@link io.delayrelay.app.engine.AckCarrier}
 * → {@code ShardStore.ack} (ack.lua).
 */
package io.delayrelay.app.engine;
