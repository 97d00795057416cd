/**
 * Plumbing shared by the producer and the relay (script loading); not part of the public API.
 */
package io.delayrelay.api.support;
