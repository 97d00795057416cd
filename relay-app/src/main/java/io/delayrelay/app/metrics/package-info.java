/**
 * Micrometer meters of the relay (names and tags defined once) and the backlog sampler.
 */
package io.delayrelay.app.metrics;
