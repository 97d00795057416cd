/**
 * Plumbing shared by the producer and the relay (byte-array templates, script loading, the shard topology read from
 * {@code K:meta}). Not part of the API: it may change in any release.
 */
package io.delayrelay.api.internal;
