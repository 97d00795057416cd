/**
 * The per-business extension point ({@code AbstractDelayedMsgScanTrigger}) and the immutable business spec it resolves to.
 */
package io.delayrelay.app.trigger;
