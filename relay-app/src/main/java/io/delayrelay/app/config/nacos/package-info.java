/**
 * Nacos as the daemon's config center (profile {@code nacos}): its values win over local files, start-up refuses
 * to run silently without it, and a lost connection is reported once. Classes that touch the Nacos client are only
 * loaded when it is on the classpath.
 */
package io.delayrelay.app.config.nacos;
