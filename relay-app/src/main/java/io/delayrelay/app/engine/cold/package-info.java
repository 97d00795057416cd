/**
 * The cold tier: entries due further ahead than a business's {@code cold-after} leave the hot shard for compressed
 * blocks in Redis and come back ahead of their due time (docs/cold-tier.md).
 */
package io.delayrelay.app.engine.cold;
