package io.delayrelay.app.fleet;

/**
 * An operator's fleet-wide pause of one business, as stored in {@code K:meta}.
 *
 * @param paused whether an operator paused the business
 * @param by     who paused it, null when not paused
 * @param at     when, epoch ms (Redis time), null when not paused
 */
public record OperatorPause(boolean paused, String by, Long at) {

    /** No operator pause. */
    public static final OperatorPause NONE = new OperatorPause(false, null, null);
}
