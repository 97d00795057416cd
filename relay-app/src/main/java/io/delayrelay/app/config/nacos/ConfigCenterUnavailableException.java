package io.delayrelay.app.config.nacos;

/** The config center the relay was told to use could not provide its data at start. One line, naming both. */
public class ConfigCenterUnavailableException extends RuntimeException {

    public ConfigCenterUnavailableException(String message) {
        super(message);
    }
}
