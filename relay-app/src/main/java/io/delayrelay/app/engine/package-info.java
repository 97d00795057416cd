/**
 * The relay engine: per business, worker threads that pop due entries with Lua, publish them with confirms and settle the outcome.
 */
package io.delayrelay.app.engine;
