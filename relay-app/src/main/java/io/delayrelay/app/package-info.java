/**
 * The relay daemon's entry point; the engine, its configuration and its operations live in the sub-packages.
 */
package io.delayrelay.app;
