/**
 * A demo business for {@code scripts/run.sh}: schedules a few reminders and prints each arrival with its lag.
 */
package io.delayrelay.app.demo;
