/**
 * Small building blocks the relay's packages share: the periodic background task behind its chores, named daemon
 * threads, and the short text of an exception's root cause for log lines and dead letters.
 */
package io.delayrelay.app.support;
