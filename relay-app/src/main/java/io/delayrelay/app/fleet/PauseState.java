package io.delayrelay.app.fleet;

/**
 * Why a business is paused or not: configuration ({@code paused: true}) and an operator's fleet-wide pause combine,
 * the business is paused while either says so.
 *
 * @param config   what configuration says
 * @param operator the operator's pause as last read from Redis
 */
public record PauseState(boolean config, OperatorPause operator) {

    /** Paused if configuration or an operator says so. */
    public boolean effective() {
        return config || operator.paused();
    }
}
