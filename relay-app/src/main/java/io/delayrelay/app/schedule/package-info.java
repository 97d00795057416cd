/**
 * Recurring schedules ({@code relay.schedules.*} and runtime-created ones): each slot of a cron expression or fixed
 * period becomes one entry by id in the business's shard 0, written once fleet-wide a few seconds ahead, which the
 * relay then publishes like any entry (docs/schedules.md).
 */
package io.delayrelay.app.schedule;
