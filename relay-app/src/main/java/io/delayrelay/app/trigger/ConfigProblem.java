package io.delayrelay.app.trigger;

/**
 * One reason a business's configuration cannot be used, typed so that callers act on the business (keep its
 * previous settings, count it) without parsing text.
 *
 * @param business the business it concerns; empty when it concerns no single business
 * @param property the offending property ({@code relay.businesses.<name>.<property>}), or null when the business
 *                 as a whole is at fault (e.g. declared twice)
 * @param value    the offending value as configured, or null
 * @param message  the whole problem for people: names business or property, value and what is expected
 */
public record ConfigProblem(String business, String property, String value, String message) {

    /** A property of a business holds a bad value: {@code relay.businesses.<b>.<p>=<value>: <reason>}. */
    public static ConfigProblem property(String business, String property, Object value, String reason) {
        String name = "relay.businesses." + business + "." + property;
        String text = value == null ? "null" : value.toString();
        return new ConfigProblem(business, name, text, name + "=" + text + ": " + reason);
    }

    /** Like {@link #property}, for a required text left blank: the value is shown quoted. */
    public static ConfigProblem blank(String business, String property, String value, String reason) {
        String name = "relay.businesses." + business + "." + property;
        String text = value == null ? "" : value;
        return new ConfigProblem(business, name, text, name + "='" + text + "': " + reason);
    }

    /** The business as a whole is at fault: {@code <subject>: <reason>}, e.g. {@code business 'x': ...}. */
    public static ConfigProblem business(String business, String subject, String reason) {
        return new ConfigProblem(business, null, null, subject + ": " + reason);
    }

    /** A relay-wide property holds a bad value: {@code <property>=<value>: <reason>}. */
    public static ConfigProblem global(String property, Object value, String reason) {
        String text = value == null ? "null" : value.toString();
        return new ConfigProblem("", property, text, property + "=" + text + ": " + reason);
    }

    /** Concerns no single business (e.g. {@code relay.businesses} cannot be bound at all). */
    public static ConfigProblem global(String property, String reason) {
        return new ConfigProblem("", property, null, property + ": " + reason);
    }

    @Override
    public String toString() {
        return message;
    }
}
