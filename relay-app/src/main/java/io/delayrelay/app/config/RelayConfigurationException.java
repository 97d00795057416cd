package io.delayrelay.app.config;

import java.util.List;

/** Invalid relay configuration: every problem found, each naming the business, property and value. */
public class RelayConfigurationException extends RuntimeException {

    private final List<String> problems;

    public RelayConfigurationException(List<String> problems) {
        super("Invalid delay-relay configuration:\n  - " + String.join("\n  - ", problems));
        this.problems = List.copyOf(problems);
    }

    public List<String> problems() {
        return problems;
    }
}
