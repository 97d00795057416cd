/**
 * The relay's {@code relay.*} properties, their validation into business specs, auto-configuration and hot reload.
 */
package io.delayrelay.app.config;
