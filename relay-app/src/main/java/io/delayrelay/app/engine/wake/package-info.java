/**
 * Wake-up sources: a producer's {@code K:wake} message ({@link io.delayrelay.app.engine.wake.WakeSubscriber}) and
 * Redis keyspace notifications turned into peeks at a shard's head
 * ({@link io.delayrelay.app.engine.wake.KeyspaceWakeSource}, {@code ShardPeeks}). They reach a business only
 * through {@link io.delayrelay.app.engine.wake.ShardWakeups}, so they import nothing else of the engine. A wake-up
 * is a signal, never storage: a lost one costs at most one safety sweep. Redis calls of the keyspace source go
 * through {@code KeyspaceConnection}: {@code StandaloneKeyspace} or {@code ClusterKeyspace}.
 */
package io.delayrelay.app.engine.wake;
