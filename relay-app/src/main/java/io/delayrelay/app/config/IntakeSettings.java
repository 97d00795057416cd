package io.delayrelay.app.config;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.delayrelay.app.trigger.ConfigProblem;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;

/**
 * {@code relay.intakes.<name>.*}: an AMQP intake. Publishers send messages with an {@code x-delay} header to
 * {@code exchange}, as they did to the delayed-message plugin's exchange. The relay keeps each one in the business's
 * shards and publishes it, when due, to {@code deliver-to} with the routing key it came with.
 */
public class IntakeSettings {

    /** Default number of unacknowledged intake messages the broker hands over at once. */
    public static final int DEFAULT_PREFETCH = 250;

    static final int MAX_PREFETCH = 65_535;

    /** Exchange publishers publish to (durable, type topic; declared unless it exists). */
    private String exchange;

    /** Exchange due messages are published to, with the routing key they were published with. */
    private String deliverTo;

    /** Business whose shards, threads and policies hold the entries; default: the intake's name. */
    private String business;

    /** Longest accepted delay; a message due later goes to the dead set. Default: none. */
    private Duration maxDelay;

    /** Intake messages the broker hands over unacknowledged at once (1-65535). */
    private int prefetch = DEFAULT_PREFETCH;

    /**
     * Store messages compressed with a dictionary trained on the business's first intake messages (about a quarter of
     * the Redis bytes for small messages). Default: true.
     */
    private boolean compress = true;

    public boolean isCompress() {
        return compress;
    }

    public void setCompress(boolean compress) {
        this.compress = compress;
    }

    public String getExchange() {
        return exchange;
    }

    public void setExchange(String exchange) {
        this.exchange = exchange;
    }

    public String getDeliverTo() {
        return deliverTo;
    }

    public void setDeliverTo(String deliverTo) {
        this.deliverTo = deliverTo;
    }

    public String getBusiness() {
        return business;
    }

    public void setBusiness(String business) {
        this.business = business;
    }

    public Duration getMaxDelay() {
        return maxDelay;
    }

    public void setMaxDelay(Duration maxDelay) {
        this.maxDelay = maxDelay;
    }

    public int getPrefetch() {
        return prefetch;
    }

    public void setPrefetch(int prefetch) {
        this.prefetch = prefetch;
    }

    /** The business of intake {@code name}: its own setting, or the name. */
    public String businessOf(String name) {
        return business == null || business.isBlank() ? name : business;
    }

    /** The durable queue an intake reads: {@code delay-relay.intake.<name>}. */
    public static String queueOf(String name) {
        return "delay-relay.intake." + name;
    }

    /**
     * The intakes' businesses, each with the deliver-to exchange of its first intake (in name order); bound from
     * {@code relay.intakes}. Unbindable settings give none here: {@link #validate} reports them at start.
     */
    static Map<String, String> deliverToByBusiness(Binder binder) {
        Map<String, String> byBusiness = new LinkedHashMap<>();
        try {
            Map<String, IntakeSettings> intakes = binder.bind(
                            "relay.intakes", Bindable.mapOf(String.class, IntakeSettings.class))
                    .orElseGet(Map::of);
            new TreeMap<>(intakes).forEach((name, s) -> {
                if (s.deliverTo != null && !s.deliverTo.isBlank()) {
                    byBusiness.putIfAbsent(s.businessOf(name), s.deliverTo);
                }
            });
        } catch (BindException e) {
            // reported by validate() at start and by the intakes' own reload
        }
        return byBusiness;
    }

    /** Adds a problem per bad setting of every intake, naming the property and its value. */
    public static void validate(Map<String, IntakeSettings> intakes, List<ConfigProblem> problems) {
        Map<String, String> exchanges = new HashMap<>();
        intakes.forEach((name, s) -> {
            String at = "relay.intakes." + name;
            if (name == null || !BusinessSpecResolver.NAME.matcher(name).matches()) {
                problems.add(
                        ConfigProblem.global(at, "intake name '" + name + "': use lowercase letters, digits and '-'"));
                return;
            }
            if (s.exchange == null || s.exchange.isBlank()) {
                problems.add(ConfigProblem.global(at + ".exchange", s.exchange, "is required"));
            } else {
                String other = exchanges.putIfAbsent(s.exchange, name);
                if (other != null) {
                    problems.add(ConfigProblem.global(
                            at + ".exchange", s.exchange, "is already the exchange of intake '" + other + "'"));
                }
            }
            if (s.deliverTo == null || s.deliverTo.isBlank()) {
                problems.add(ConfigProblem.global(at + ".deliver-to", s.deliverTo, "is required"));
            } else if (s.deliverTo.equals(s.exchange)) {
                problems.add(ConfigProblem.global(
                        at + ".deliver-to", s.deliverTo, "must differ from the intake's exchange (a loop)"));
            }
            String business = s.businessOf(name);
            if (!BusinessSpecResolver.NAME.matcher(business).matches()) {
                problems.add(ConfigProblem.global(
                        at + ".business", business, "use lowercase letters, digits and '-' (a business name)"));
            }
            if (s.maxDelay != null && (s.maxDelay.isNegative() || s.maxDelay.isZero())) {
                problems.add(ConfigProblem.global(
                        at + ".max-delay", s.maxDelay, "must be a positive duration (leave it unset for none)"));
            }
            if (s.prefetch < 1 || s.prefetch > MAX_PREFETCH) {
                problems.add(
                        ConfigProblem.global(at + ".prefetch", s.prefetch, "must be between 1 and " + MAX_PREFETCH));
            }
        });
    }
}
