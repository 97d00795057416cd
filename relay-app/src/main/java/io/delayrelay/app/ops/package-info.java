/**
 * Operations: the {@code relay} actuator endpoint, its token filter, dead-letter access and readiness.
 */
package io.delayrelay.app.ops;
