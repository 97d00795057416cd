/**
 * What producers and consumers need: the Redis key contract, the shard rule, the producer client and the AMQP header names consumers read.
 */
package io.delayrelay.api;
