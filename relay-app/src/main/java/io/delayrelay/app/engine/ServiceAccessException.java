package io.delayrelay.app.engine;

/**
 * Redis or RabbitMQ answered at start but refused the relay: wrong password or user, an ACL or permission that
 * does not allow the relay's commands, a virtual host that does not exist. Waiting does not fix it, so start-up
 * fails; the failure analyzer reports it in one message naming the server, the user and what to check.
 */
public class ServiceAccessException extends RuntimeException {

    private final String service;
    private final String endpoint;
    private final String check;

    /**
     * @param service  {@code Redis} or {@code RabbitMQ}
     * @param endpoint where and as whom, e.g. {@code 10.0.0.7:6379 as user 'delay-relay'}
     * @param reason   the server's answer
     * @param check    what the operator should check
     */
    public ServiceAccessException(String service, String endpoint, String reason, String check, Throwable cause) {
        super(service + " at " + endpoint + " refused the relay: " + reason, cause);
        this.service = service;
        this.endpoint = endpoint;
        this.check = check;
    }

    public String service() {
        return service;
    }

    public String endpoint() {
        return endpoint;
    }

    /** What to check, for the failure report. */
    public String check() {
        return check;
    }
}
