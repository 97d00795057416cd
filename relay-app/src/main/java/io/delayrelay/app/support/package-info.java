/**
 * Small building blocks the relay's packages share: the periodic background task behind its chores.
 */
package io.delayrelay.app.support;
