package io.delayrelay.app.trigger;

import java.util.List;

/**
 * Invalid relay configuration: every problem found, each naming the business, property and value. Thrown at start
 * by configuration resolution and by the engine (an exchange that does not exist); the failure analyzer turns it
 * into a short start-up report.
 */
public class RelayConfigurationException extends RuntimeException {

    private final List<ConfigProblem> problems;

    public RelayConfigurationException(List<ConfigProblem> problems) {
        super("Invalid delay-relay configuration:\n  - "
                + String.join(
                        "\n  - ", problems.stream().map(ConfigProblem::message).toList()));
        this.problems = List.copyOf(problems);
    }

    public List<ConfigProblem> problems() {
        return problems;
    }
}
