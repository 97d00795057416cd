package io.delayrelay.app.engine;

import java.util.ArrayList;
import java.util.List;

import io.delayrelay.app.support.Exceptions;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.AmqpConnectException;

/**
 * Checks (or declares) a business's exchange before its workers start. A missing exchange is a configuration
 * problem when exchanges are verified. At start, an unreachable broker makes the engine wait for it (not Ready) and
 * a refusal (credentials, permissions, vhost) fails start-up; on a reload an unreachable broker is only logged
 * (messages wait in Redis until it is back).
 */
final class ExchangeCheck {

    private static final Logger log = LoggerFactory.getLogger(ExchangeCheck.class);

    private final BatchPublisher publisher;
    private final boolean verifyExchanges;

    ExchangeCheck(BatchPublisher publisher, boolean verifyExchanges) {
        this.publisher = publisher;
        this.verifyExchanges = verifyExchanges;
    }

    /**
     * At start: like {@link #problem}, but a broker that cannot be reached or refuses the relay's credentials,
     * permissions or virtual host throws (the engine waits for the first, fails start-up on the second) instead of
     * starting a relay that cannot publish.
     */
    /**
     * At start: checks every business's exchange, and throws naming every one missing.
     *
     * @throws RelayConfigurationException when an exchange is missing
     */
    void requireAtStart(List<BusinessSpec> specs) {
        List<ConfigProblem> missing = new ArrayList<>();
        for (BusinessSpec spec : specs) {
            ConfigProblem problem = problemAtStart(spec);
            if (problem != null) {
                missing.add(problem);
            }
        }
        if (!missing.isEmpty()) {
            throw new RelayConfigurationException(missing);
        }
    }

    ConfigProblem problemAtStart(BusinessSpec spec) {
        try {
            publisher.prepareExchange(spec);
        } catch (RuntimeException e) {
            if (ServiceFailure.ofRabbit(e) != ServiceFailure.OTHER) {
                throw e;
            }
            return problem(spec, e);
        }
        return null;
    }

    /** Returns the problem when the exchange is missing (and must exist), else null. */
    ConfigProblem problem(BusinessSpec spec) {
        try {
            publisher.prepareExchange(spec);
        } catch (AmqpConnectException e) {
            log.warn(
                    "business={}: RabbitMQ is not reachable ({}); exchange '{}' not checked, "
                            + "messages stay in Redis until the broker is back",
                    spec.name(),
                    Exceptions.rootMessage(e),
                    spec.route().exchange());
        } catch (RuntimeException e) {
            return problem(spec, e);
        }
        return null;
    }

    private ConfigProblem problem(BusinessSpec spec, RuntimeException e) {
        String cause = Exceptions.rootMessage(e);
        if (cause.contains("NOT_FOUND") && verifyExchanges) {
            return ConfigProblem.property(
                    spec.name(),
                    "exchange",
                    spec.route().exchange(),
                    "no such exchange on the broker (declare it, or set declare-exchange: true)");
        }
        log.warn(
                "business={}: could not check exchange '{}': {}",
                spec.name(),
                spec.route().exchange(),
                cause);
        return null;
    }
}
