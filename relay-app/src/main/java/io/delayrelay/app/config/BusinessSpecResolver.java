package io.delayrelay.app.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
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
 * collected and reported at once, naming business, property and value.
 * <p>
 * Longer than 300 lines because every per-business setting is validated here, each check next to the wording of
 * its error, so one read shows what a business may be configured with.
 */
public final class BusinessSpecResolver {

    static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9-]*[a-z0-9])?");
    static final List<String> EXCHANGE_TYPES = List.of("direct", "topic", "fanout", "headers");
    static final List<String> ON_LATE = List.of("dead", "drop");
    static final List<String> MESSAGE_SHAPES = List.of("full", "lean");
    static final int MAX_BATCH_SIZE = 2000;
    static final int MAX_THREADS = 256;
    static final int MAX_SHARDS = 16384;
    static final DataSize MIN_BATCH_BYTES = DataSize.ofKilobytes(1);
    static final DataSize MAX_BATCH_BYTES = DataSize.ofMegabytes(512);
    /** Highest max-rate (messages per second): far above what one business's relay fleet publishes. */
    static final int MAX_RATE = 10_000_000;

    /** An inclusive range of valid values of an integer setting. */
    public record Range(int min, int max) {}

    /**
     * The valid range of each integer setting of a business, by property name (as under {@code relay.defaults}):
     * the one place validation and the Helm chart's values.schema.json take them from.
     */
    public static final Map<String, Range> INTEGER_RANGES = ranges(
            "shards", new Range(1, MAX_SHARDS),
            "threads", new Range(1, MAX_THREADS),
            "batch-size", new Range(1, MAX_BATCH_SIZE),
            "max-attempts", new Range(1, 1000),
            "dead-max-size", new Range(1, Integer.MAX_VALUE),
            "max-rate", new Range(1, MAX_RATE));

    private static Map<String, Range> ranges(Object... pairs) {
        Map<String, Range> ranges = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            ranges.put((String) pairs[i], (Range) pairs[i + 1]);
        }
        return Collections.unmodifiableMap(ranges);
    }

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
        range(problems, name, "shards", s.getShards());
        range(problems, name, "threads", s.getThreads());
        range(problems, name, "batch-size", s.getBatchSize());
        if (s.getBatchBytes() == null
                || s.getBatchBytes().compareTo(MIN_BATCH_BYTES) < 0
                || s.getBatchBytes().compareTo(MAX_BATCH_BYTES) > 0) {
            problems.add(ConfigProblem.property(
                    name,
                    "batch-bytes",
                    s.getBatchBytes(),
                    "must be between " + MIN_BATCH_BYTES + " and " + MAX_BATCH_BYTES));
        }
        range(problems, name, "max-attempts", s.getMaxAttempts());
        range(problems, name, "dead-max-size", s.getDeadMaxSize());
        positive(problems, name, "dead-max-age", s.getDeadMaxAge());
        required(problems, name, "exchange", s.getExchange());
        required(problems, name, "routing-key", s.getRoutingKey());
        if (s.getExchangeType() == null || !EXCHANGE_TYPES.contains(s.getExchangeType())) {
            problems.add(ConfigProblem.property(
                    name, "exchange-type", s.getExchangeType(), "must be one of " + EXCHANGE_TYPES));
        }
        positive(problems, name, "max-idle", s.getMaxIdle());
        positive(problems, name, "lease", s.getLease());
        positive(problems, name, "retry-delay", s.getRetryDelay());
        positive(problems, name, "retry-delay-max", s.getRetryDelayMax());
        positive(problems, name, "publish-timeout", s.getPublishTimeout());
        if (s.getMaxLateness() != null
                && (s.getMaxLateness().isNegative() || s.getMaxLateness().isZero())) {
            problems.add(ConfigProblem.property(
                    name,
                    "max-lateness",
                    s.getMaxLateness(),
                    "must be a positive duration (leave it unset to deliver however late)"));
        }
        if (s.getOnLate() == null || !ON_LATE.contains(s.getOnLate())) {
            problems.add(ConfigProblem.property(name, "on-late", s.getOnLate(), "must be one of " + ON_LATE));
        }
        if (s.getMessageShape() == null || !MESSAGE_SHAPES.contains(s.getMessageShape())) {
            problems.add(ConfigProblem.property(
                    name, "message-shape", s.getMessageShape(), "must be one of " + MESSAGE_SHAPES));
        }
        if (s.getMaxRate() != null) {
            range(problems, name, "max-rate", s.getMaxRate());
        }
        Duration coldAfter = s.getColdAfter();
        if (coldAfter != null && !coldAfter.isZero() && coldAfter.compareTo(BusinessSpec.MIN_COLD_AFTER) < 0) {
            problems.add(ConfigProblem.property(
                    name,
                    "cold-after",
                    coldAfter,
                    "must be at least " + BusinessSpec.MIN_COLD_AFTER + " (or 0 / unset: no cold tier)"));
        }
        if (s.getLinger() == null
                || s.getLinger().isNegative()
                || s.getLinger().compareTo(BusinessSettings.MAX_LINGER) > 0) {
            problems.add(ConfigProblem.property(
                    name,
                    "linger",
                    s.getLinger(),
                    "must be between 0 and " + BusinessSettings.MAX_LINGER
                            + " (0: pop each shard as soon as it is due)"));
        }
        Duration lead = s.getLead() == null ? BusinessSpec.DEFAULT_LEAD : s.getLead();
        if (lead.isNegative() || lead.compareTo(BusinessSettings.MAX_LEAD) > 0) {
            problems.add(ConfigProblem.property(
                    name,
                    "lead",
                    lead,
                    "must be between 0 and " + BusinessSettings.MAX_LEAD
                            + " (0: off, each entry popped once it is due)"));
        } else if (s.getLease() != null
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
        BusinessSettings.Slo slo = s.getSlo();
        positive(problems, name, "slo.on-time", slo == null ? null : slo.getOnTime());
        double target = slo == null ? Double.NaN : slo.getTarget();
        if (!(target > 0 && target < 1)) {
            problems.add(ConfigProblem.property(
                    name, "slo.target", target, "must be a ratio between 0 and 1 (exclusive), e.g. 0.999"));
        }
        if (problems.size() > before) {
            return null;
        }
        String threadNamePrefix = s.getThreadNamePrefix() != null ? s.getThreadNamePrefix() : "relay-" + name + "-";
        OutgoingMessages outgoing = trigger != null ? trigger : OutgoingMessages.DEFAULT;
        return new BusinessSpec(
                name,
                keys,
                s.getShards(),
                s.getThreads(),
                threadNamePrefix,
                s.getExchange(),
                s.getRoutingKey(),
                s.getExchangeType(),
                s.isDeclareExchange(),
                s.getBatchSize(),
                s.getBatchBytes().toBytes(),
                s.getMaxIdle(),
                s.getLease(),
                s.getMaxAttempts(),
                s.getRetryDelay(),
                s.getRetryDelayMax(),
                s.getPublishTimeout(),
                s.getDeadMaxSize(),
                s.getDeadMaxAge(),
                s.isPaused(),
                outgoing,
                s.getMaxLateness(),
                "drop".equals(s.getOnLate()),
                s.getMaxRate() == null ? BusinessSpec.NO_MAX_RATE : s.getMaxRate(),
                slo.getOnTime(),
                slo.getTarget(),
                MessageShape.parse(s.getMessageShape()),
                s.getLinger(),
                coldAfter == null || coldAfter.isZero() ? null : coldAfter,
                lead);
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

    private static void range(List<ConfigProblem> problems, String business, String property, int value) {
        Range range = INTEGER_RANGES.get(property);
        if (value < range.min() || value > range.max()) {
            problems.add(ConfigProblem.property(
                    business, property, value, "must be between " + range.min() + " and " + range.max()));
        }
    }

    private static void required(List<ConfigProblem> problems, String business, String property, String value) {
        if (value == null || value.isBlank()) {
            problems.add(ConfigProblem.blank(business, property, value, "required, must not be blank"));
        }
    }

    private static void positive(List<ConfigProblem> problems, String business, String property, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            problems.add(ConfigProblem.property(business, property, value, "must be a positive duration"));
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
