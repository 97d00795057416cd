/**
 * State the relay instances of a fleet share through Redis: the operator's pause per business ({@code K:meta}) and
 * each instance's heartbeat ({@code K:instances}), so any instance can show and change the whole fleet.
 */
package io.delayrelay.app.fleet;
