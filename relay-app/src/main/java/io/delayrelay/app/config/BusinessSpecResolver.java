package io.delayrelay.app.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.BusinessSpec.Range;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.MessageShape;
import io.delayrelay.app.trigger.OutgoingMessages;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;
import org.springframework.util.unit.DataSize;

/**
 * Builds the {@link BusinessSpec}s in force from the environment and the trigger beans. Layers, later wins:
 * {@code relay.defaults}, the trigger's non-null values, {@code relay.businesses.<name>}. Every problem is
 * collected and reported at once, naming business, property and value: the ranges of each setting by
 * {@link BusinessSpec#validate()}, the values that do not parse and the rules between settings here.
 */
public final class BusinessSpecResolver {

    static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9-]*[a-z0-9])?");
    static final List<String> ON_LATE = List.of("dead", "drop");
    static final List<String> MESSAGE_SHAPES = List.of("full", "lean");
    static final DataSize MIN_BATCH_BYTES = DataSize.ofBytes(BusinessSpec.MIN_BATCH_BYTES);
    static final DataSize MAX_BATCH_BYTES = DataSize.ofBytes(BusinessSpec.MAX_BATCH_BYTES);

    /**
     * The valid range of each integer setting of a business, by property name (as under {@code relay.defaults}):
     * the one place validation and the Helm chart's values.schema.json take them from.
     */
    public static final Map<String, Range> INTEGER_RANGES = BusinessSpec.INTEGER_RANGES;

    private BusinessSpecResolver() {}

    /**
     * What configuration and triggers say: the valid businesses, and the problems of the others by business name
     * (problems not tied to one business are under the empty name).
     */
    public record Resolution(List<BusinessSpec> specs, Map<String, List<ConfigProblem>> problems) {

        public boolean isValid() {
            return problems.isEmpty();
        }

        public List<ConfigProblem> allProblems() {
            return problems.values().stream().flatMap(List::stream).toList();
        }
    }

    /**
     * The businesses in force; throws {@link RelayConfigurationException} listing every problem, unknown
     * {@code relay.*} keys first ({@link UnknownRelayKeys}).
     */
    public static List<BusinessSpec> resolve(
            Environment environment, Collection<? extends AbstractDelayedMsgScanTrigger> triggers) {
        List<ConfigProblem> problems =
                new ArrayList<>(UnknownRelayKeys.fromClasspath().problems(environment));
        Resolution resolution = resolveAll(environment, triggers);
        problems.addAll(resolution.allProblems());
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
        return resolution.specs();
    }

    /** Resolves every business, collecting problems per business instead of failing. */
    public static Resolution resolveAll(
            Environment environment, Collection<? extends AbstractDelayedMsgScanTrigger> triggers) {
        Binder binder = Binder.get(environment);
        Map<String, List<ConfigProblem>> problems = new LinkedHashMap<>();
        Map<String, AbstractDelayedMsgScanTrigger> byName = new LinkedHashMap<>();
        for (AbstractDelayedMsgScanTrigger trigger : triggers) {
            String name = trigger.getBusiness();
            AbstractDelayedMsgScanTrigger previous = byName.putIfAbsent(name, trigger);
            if (previous != null) {
                problemsOf(problems, name)
                        .add(ConfigProblem.business(
                                name,
                                "business '" + name + "'",
                                "declared by two trigger beans ("
                                        + previous.getClass().getName() + ", "
                                        + trigger.getClass().getName() + ")"));
            }
        }
        Set<String> names = new LinkedHashSet<>(byName.keySet());
        names.addAll(configuredNames(binder, problemsOf(problems, "")));
        Map<String, String> intakeExchanges = IntakeSettings.deliverToByBusiness(binder);
        names.addAll(intakeExchanges.keySet());
        if (problems.get("").isEmpty()) {
            problems.remove("");
        }

        List<BusinessSpec> specs = new ArrayList<>();
        Map<String, String> sourceKeys = new HashMap<>();
        for (String name : names) {
            List<ConfigProblem> own = new ArrayList<>();
            BusinessSpec spec = resolveOne(binder, name, byName.get(name), intakeExchanges.get(name), own);
            if (spec != null) {
                String other = sourceKeys.putIfAbsent(spec.keys().sourceKey(), name);
                if (other != null) {
                    own.add(ConfigProblem.property(
                            name, "source-key", spec.keys().sourceKey(), "already used by business '" + other + "'"));
                } else if (!problems.containsKey(name)) {
                    specs.add(spec);
                }
            }
            if (!own.isEmpty()) {
                problemsOf(problems, String.valueOf(name)).addAll(own);
            }
        }
        return new Resolution(List.copyOf(specs), problems);
    }

    private static List<ConfigProblem> problemsOf(Map<String, List<ConfigProblem>> problems, String name) {
        return problems.computeIfAbsent(name, k -> new ArrayList<>());
    }

    private static Set<String> configuredNames(Binder binder, List<ConfigProblem> problems) {
        try {
            return binder.bind("relay.businesses", Bindable.mapOf(String.class, Object.class))
                    .map(Map::keySet)
                    .map(TreeSet::new)
                    .map(LinkedHashSet::new)
                    .orElseGet(LinkedHashSet::new);
        } catch (BindException e) {
            problems.add(ConfigProblem.global("relay.businesses", describe(e)));
            return Set.of();
        }
    }

    private static BusinessSpec resolveOne(
            Binder binder,
            String name,
            AbstractDelayedMsgScanTrigger trigger,
            String intakeDeliverTo,
            List<ConfigProblem> problems) {
        if (name == null || !NAME.matcher(name).matches()) {
            problems.add(ConfigProblem.business(
                    String.valueOf(name),
                    "business name '" + name + "'",
                    "use lowercase letters, digits and '-' (it is a key under relay.businesses)"));
            return null;
        }
        BusinessSettings s = new BusinessSettings();
        try {
            binder.bind("relay.defaults", Bindable.ofInstance(s));
            if (trigger != null) {
                applyTrigger(trigger, s);
            }
            binder.bind("relay.businesses." + name, Bindable.ofInstance(s));
            if (intakeDeliverTo != null && s.getExchange() == null) {
                // a business used only by intakes: its exchange is where they deliver; each entry has its routing key
                s.setExchange(intakeDeliverTo);
                s.setRoutingKey(s.getRoutingKey() == null ? "#" : s.getRoutingKey());
            }
        } catch (BindException e) {
            problems.add(ConfigProblem.business(name, "business '" + name + "'", describe(e)));
            return null;
        }
        int before = problems.size();
        DelayQueueKeys keys = null;
        try {
            keys = s.getSourceKey() == null ? DelayQueueKeys.forBusiness(name) : DelayQueueKeys.of(s.getSourceKey());
        } catch (IllegalArgumentException e) {
            problems.add(ConfigProblem.property(name, "source-key", s.getSourceKey(), e.getMessage()));
        }
        long batchBytes = BusinessSpec.DEFAULT_BATCH_BYTES;
        if (s.getBatchBytes() == null) {
            problems.add(ConfigProblem.property(
                    name, "batch-bytes", null, "must be between " + MIN_BATCH_BYTES + " and " + MAX_BATCH_BYTES));
        } else {
            batchBytes = s.getBatchBytes().toBytes();
        }
        if (Integer.valueOf(BusinessSpec.NO_MAX_RATE).equals(s.getMaxRate())) {
            Range range = INTEGER_RANGES.get("max-rate");
            problems.add(ConfigProblem.property(
                    name, "max-rate", s.getMaxRate(), "must be between " + range.min() + " and " + range.max()));
        }
        Duration lead = s.getLead() == null ? BusinessSpec.DEFAULT_LEAD : s.getLead();
        BusinessSpec spec =
                toSpec(name, keys == null ? DelayQueueKeys.forBusiness(name) : keys, s, trigger, lead, batchBytes);
        problems.addAll(spec.validate());
        if (s.getOnLate() == null || !ON_LATE.contains(s.getOnLate())) {
            problems.add(ConfigProblem.property(name, "on-late", s.getOnLate(), "must be one of " + ON_LATE));
        }
        if (s.getMessageShape() == null || !MESSAGE_SHAPES.contains(s.getMessageShape())) {
            problems.add(ConfigProblem.property(
                    name, "message-shape", s.getMessageShape(), "must be one of " + MESSAGE_SHAPES));
        }
        boolean leadInRange = !lead.isNegative() && lead.compareTo(BusinessSpec.MAX_LEAD) <= 0;
        if (leadInRange
                && s.getLease() != null
                && lead.multipliedBy(BusinessSettings.LEASE_PER_LEAD).compareTo(s.getLease()) > 0) {
            problems.add(ConfigProblem.property(
                    name,
                    "lead",
                    lead,
                    "must be at most a " + BusinessSettings.LEASE_PER_LEAD + "th of the lease (" + s.getLease()
                            + "): an entry popped ahead waits up to the lead under its lease"));
        }
        LeaseRule.check(name, s.getLease(), lead, s.getLinger(), s.getPublishTimeout())
                .ifPresent(problems::add);
        return problems.size() > before ? null : spec;
    }

    /** The spec the settings say, unvalidated; {@code keys}, {@code lead} and {@code batchBytes} already read. */
    private static BusinessSpec toSpec(
            String name,
            DelayQueueKeys keys,
            BusinessSettings s,
            AbstractDelayedMsgScanTrigger trigger,
            Duration lead,
            long batchBytes) {
        Duration coldAfter = s.getColdAfter();
        BusinessSettings.Slo slo = s.getSlo();
        return new BusinessSpec(
                name,
                keys,
                s.getShards(),
                s.getThreads(),
                s.getThreadNamePrefix() != null ? s.getThreadNamePrefix() : "relay-" + name + "-",
                new BusinessSpec.Route(s.getExchange(), s.getRoutingKey(), s.getExchangeType(), s.isDeclareExchange()),
                new BusinessSpec.Batch(s.getBatchSize(), batchBytes),
                new BusinessSpec.Timing(s.getMaxIdle(), s.getLinger(), lead, s.getLease(), s.getPublishTimeout()),
                new BusinessSpec.Retry(s.getMaxAttempts(), s.getRetryDelay(), s.getRetryDelayMax()),
                new BusinessSpec.DeadSet(s.getDeadMaxSize(), s.getDeadMaxAge()),
                new BusinessSpec.LatePolicy(s.getMaxLateness(), "drop".equals(s.getOnLate())),
                s.getMaxRate() == null ? BusinessSpec.NO_MAX_RATE : s.getMaxRate(),
                slo == null ? null : new BusinessSpec.Slo(slo.getOnTime(), slo.getTarget()),
                coldAfter == null || coldAfter.isZero() ? null : coldAfter,
                s.getMessageShape() != null && MESSAGE_SHAPES.contains(s.getMessageShape())
                        ? MessageShape.parse(s.getMessageShape())
                        : null,
                trigger != null ? trigger : OutgoingMessages.DEFAULT,
                s.isPaused());
    }

    private static void applyTrigger(AbstractDelayedMsgScanTrigger trigger, BusinessSettings s) {
        if (trigger.getSourceKey() != null) {
            s.setSourceKey(trigger.getSourceKey());
        }
        if (trigger.getThreadNum() != null) {
            s.setThreads(trigger.getThreadNum());
        }
        if (trigger.getThreadNamePrefix() != null) {
            s.setThreadNamePrefix(trigger.getThreadNamePrefix());
        }
        if (trigger.getExchange() != null) {
            s.setExchange(trigger.getExchange());
        }
        if (trigger.getRoutingKey() != null) {
            s.setRoutingKey(trigger.getRoutingKey());
        }
        if (trigger.getShards() != null) {
            s.setShards(trigger.getShards());
        }
    }

    private static String describe(BindException e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String where = e.getProperty() != null
                ? e.getProperty().getName() + "=" + e.getProperty().getValue()
                : e.getName().toString();
        return where + ": " + root.getMessage();
    }
}
