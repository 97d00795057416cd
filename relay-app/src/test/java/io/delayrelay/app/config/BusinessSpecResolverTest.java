package io.delayrelay.app.config;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.config.BusinessSpecResolver.Resolution;
import io.delayrelay.app.trigger.AbstractDelayedMsgScanTrigger;
import io.delayrelay.app.trigger.BusinessSpec;
import io.delayrelay.app.trigger.BusinessSpec.Range;
import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.MessageShape;
import io.delayrelay.app.trigger.OutgoingMessages;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.junit.jupiter.api.Test;
import org.springframework.mock.env.MockEnvironment;
import org.springframework.util.unit.DataSize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

/**
 * How {@link BusinessSpecResolver} turns configuration and trigger beans into businesses, on a plain
 * {@link MockEnvironment} (no Spring context, no Redis, no broker): the layers (defaults, trigger, per business), every
 * bound, every problem reported at once naming business, property and value, and the order businesses come in. The
 * start-up and reload tests check the same through the running relay; this one is fast enough for the mutation run.
 */
class BusinessSpecResolverTest {

    private final MockEnvironment env = new MockEnvironment();

    @Test
    void aConfiguredBusinessGetsEveryDefaultItDoesNotSet() {
        env.setProperty("relay.businesses.orders.exchange", "orders.ex");
        env.setProperty("relay.businesses.orders.routing-key", "orders.rk");

        BusinessSpec spec = single(BusinessSpecResolver.resolve(env, List.of()));

        assertThat(spec)
                .isEqualTo(new BusinessSpec(
                        "orders",
                        DelayQueueKeys.forBusiness("orders"),
                        16,
                        2,
                        "relay-orders-",
                        new BusinessSpec.Route("orders.ex", "orders.rk", "direct", false),
                        new BusinessSpec.Batch(1000, DataSize.ofMegabytes(16).toBytes()),
                        new BusinessSpec.Timing(
                                Duration.ofMillis(100),
                                Duration.ofMillis(8),
                                BusinessSpec.DEFAULT_LEAD,
                                Duration.ofSeconds(30),
                                Duration.ofSeconds(10)),
                        new BusinessSpec.Retry(10, Duration.ofSeconds(1), Duration.ofMinutes(5)),
                        new BusinessSpec.DeadSet(10_000, Duration.ofDays(180)),
                        new BusinessSpec.LatePolicy(null, false),
                        0,
                        new BusinessSpec.Slo(Duration.ofSeconds(1), 0.999),
                        null,
                        MessageShape.FULL,
                        OutgoingMessages.DEFAULT,
                        false));
    }

    @Test
    void everySettingOfABusinessIsTakenFromItsOwnConfiguration() {
        Map.ofEntries(
                        Map.entry("source-key", "custom:orders"),
                        Map.entry("shards", "32"),
                        Map.entry("threads", "7"),
                        Map.entry("thread-name-prefix", "w-"),
                        Map.entry("exchange", "x"),
                        Map.entry("routing-key", "rk"),
                        Map.entry("exchange-type", "topic"),
                        Map.entry("declare-exchange", "true"),
                        Map.entry("batch-size", "100"),
                        Map.entry("batch-bytes", "2MB"),
                        Map.entry("max-idle", "250ms"),
                        Map.entry("lease", "60s"),
                        Map.entry("max-attempts", "3"),
                        Map.entry("retry-delay", "2s"),
                        Map.entry("retry-delay-max", "1m"),
                        Map.entry("publish-timeout", "5s"),
                        Map.entry("dead-max-size", "50"),
                        Map.entry("dead-max-age", "7d"),
                        Map.entry("paused", "true"))
                .forEach((k, v) -> env.setProperty("relay.businesses.orders." + k, v));

        BusinessSpec spec = single(BusinessSpecResolver.resolve(env, List.of()));

        assertThat(spec)
                .isEqualTo(new BusinessSpec(
                        "orders",
                        DelayQueueKeys.of("custom:orders"),
                        32,
                        7,
                        "w-",
                        new BusinessSpec.Route("x", "rk", "topic", true),
                        new BusinessSpec.Batch(100, 2 * 1024 * 1024),
                        new BusinessSpec.Timing(
                                Duration.ofMillis(250),
                                Duration.ofMillis(8),
                                BusinessSpec.DEFAULT_LEAD,
                                Duration.ofSeconds(60),
                                Duration.ofSeconds(5)),
                        new BusinessSpec.Retry(3, Duration.ofSeconds(2), Duration.ofMinutes(1)),
                        new BusinessSpec.DeadSet(50, Duration.ofDays(7)),
                        new BusinessSpec.LatePolicy(null, false),
                        0,
                        new BusinessSpec.Slo(Duration.ofSeconds(1), 0.999),
                        null,
                        MessageShape.FULL,
                        OutgoingMessages.DEFAULT,
                        true));
    }

    @Test
    void aTriggersValuesOverrideTheDefaultsAndTheBusinessesConfigurationOverridesThem() {
        env.setProperty("relay.defaults.threads", "3");
        env.setProperty("relay.defaults.shards", "64");
        env.setProperty("relay.defaults.exchange", "default.ex");
        env.setProperty("relay.defaults.routing-key", "default.rk");
        env.setProperty("relay.businesses.coded.exchange", "configured.ex");
        Trigger coded = new Trigger("coded", "coded:src", 5, "t-", "trigger.ex", "trigger.rk", 8);
        Trigger bare = new Trigger("bare", null, null, null, null, null, null);

        List<BusinessSpec> specs = BusinessSpecResolver.resolve(env, List.of(coded, bare));

        assertThat(specs).extracting(BusinessSpec::name).containsExactly("coded", "bare");
        BusinessSpec c = specs.get(0);
        assertThat(List.of(
                        c.keys().sourceKey(),
                        c.threads(),
                        c.threadNamePrefix(),
                        c.route().exchange(),
                        c.route().routingKey()))
                .containsExactly("coded:src", 5, "t-", "configured.ex", "trigger.rk");
        assertThat(c.shards()).isEqualTo(8);
        assertThat(c.outgoing()).isSameAs(coded);
        BusinessSpec b = specs.get(1);
        assertThat(List.of(
                        b.keys().sourceKey(),
                        b.threads(),
                        b.threadNamePrefix(),
                        b.route().exchange(),
                        b.route().routingKey()))
                .containsExactly("delayqueue:bare", 3, "relay-bare-", "default.ex", "default.rk");
        assertThat(b.shards()).isEqualTo(64);
        assertThat(b.outgoing()).isSameAs(bare);
    }

    @Test
    void triggerBusinessesComeFirstThenConfiguredOnesByName() {
        env.setProperty("relay.defaults.exchange", "ex");
        env.setProperty("relay.defaults.routing-key", "rk");
        env.setProperty("relay.businesses.zulu.threads", "1");
        env.setProperty("relay.businesses.alpha.threads", "1");
        env.setProperty("relay.businesses.mike.threads", "1");

        List<BusinessSpec> specs =
                BusinessSpecResolver.resolve(env, List.of(new Trigger("yankee"), new Trigger("mike")));

        assertThat(specs).extracting(BusinessSpec::name).containsExactly("yankee", "mike", "alpha", "zulu");
        assertThat(specs.get(1).outgoing())
                .as("configured and coded: one business")
                .isInstanceOf(Trigger.class);
    }

    @Test
    void theLatePolicyIsInheritedFromTheDefaultsAndABadValueIsNamed() {
        env.setProperty("relay.defaults.max-lateness", "2s");
        env.setProperty("relay.defaults.on-late", "drop");
        env.setProperty("relay.businesses.otp.exchange", "ex");
        env.setProperty("relay.businesses.otp.routing-key", "rk");
        env.setProperty("relay.businesses.orders.exchange", "ex");
        env.setProperty("relay.businesses.orders.routing-key", "rk");
        env.setProperty("relay.businesses.orders.on-late", "dead");
        env.setProperty("relay.businesses.bad.exchange", "ex");
        env.setProperty("relay.businesses.bad.routing-key", "rk");
        env.setProperty("relay.businesses.bad.max-lateness", "0s");
        env.setProperty("relay.businesses.bad.on-late", "discard");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.specs())
                .extracting(BusinessSpec::name, bs -> bs.late().maxLateness(), bs -> bs.late()
                        .drop())
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("orders", Duration.ofSeconds(2), false),
                        org.assertj.core.groups.Tuple.tuple("otp", Duration.ofSeconds(2), true));
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::message)
                .containsExactly(
                        "relay.businesses.bad.max-lateness=PT0S: must be a positive duration (leave it unset to"
                                + " deliver however late)",
                        "relay.businesses.bad.on-late=discard: must be one of [dead, drop]");
        env.setProperty("relay.defaults.max-lateness", "");
        assertThat(BusinessSpecResolver.resolveAll(env, List.of()).specs())
                .as("no max-lateness: however late")
                .allSatisfy(spec -> assertThat(spec.late().maxLateness()).isNull());
    }

    @Test
    void theMessageShapeIsInheritedFromTheDefaultsAndABadValueIsNamed() {
        env.setProperty("relay.defaults.message-shape", "lean");
        env.setProperty("relay.defaults.exchange", "ex");
        env.setProperty("relay.defaults.routing-key", "rk");
        env.setProperty("relay.businesses.clicks.threads", "1");
        env.setProperty("relay.businesses.orders.message-shape", "full");
        env.setProperty("relay.businesses.bad.message-shape", "slim");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.specs())
                .extracting(BusinessSpec::name, BusinessSpec::messageShape)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("clicks", MessageShape.LEAN),
                        org.assertj.core.groups.Tuple.tuple("orders", MessageShape.FULL));
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::business, ConfigProblem::message)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(
                        "bad", "relay.businesses.bad.message-shape=slim: must be one of [full, lean]"));
        env.setProperty("relay.defaults.message-shape", "full");
        env.setProperty("relay.businesses.bad.message-shape", "full");
        assertThat(BusinessSpecResolver.resolveAll(env, List.of()).specs())
                .as("full is the default")
                .allSatisfy(spec -> assertThat(spec.messageShape()).isEqualTo(MessageShape.FULL));
    }

    @Test
    void theLingerIsInheritedFromTheDefaultsAndABadValueIsNamed() {
        env.setProperty("relay.defaults.linger", "20ms");
        env.setProperty("relay.businesses.orders.exchange", "ex");
        env.setProperty("relay.businesses.orders.routing-key", "rk");
        env.setProperty("relay.businesses.otp.exchange", "ex");
        env.setProperty("relay.businesses.otp.routing-key", "rk");
        env.setProperty("relay.businesses.otp.linger", "0s");
        env.setProperty("relay.businesses.bad.exchange", "ex");
        env.setProperty("relay.businesses.bad.routing-key", "rk");
        env.setProperty("relay.businesses.bad.linger", "2s");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.specs())
                .extracting(BusinessSpec::name, bs -> bs.timing().linger())
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("orders", Duration.ofMillis(20)),
                        org.assertj.core.groups.Tuple.tuple("otp", Duration.ZERO));
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::message)
                .containsExactly("relay.businesses.bad.linger=PT2S: must be between 0 and PT1S (0: pop each shard as"
                        + " soon as it is due)");
    }

    @Test
    void theLeadIsInheritedFromTheDefaultsAndABadValueIsNamed() {
        env.setProperty("relay.defaults.lead", "20ms");
        env.setProperty("relay.businesses.orders.exchange", "ex");
        env.setProperty("relay.businesses.orders.routing-key", "rk");
        env.setProperty("relay.businesses.off.exchange", "ex");
        env.setProperty("relay.businesses.off.routing-key", "rk");
        env.setProperty("relay.businesses.off.lead", "0s");
        env.setProperty("relay.businesses.long.exchange", "ex");
        env.setProperty("relay.businesses.long.routing-key", "rk");
        env.setProperty("relay.businesses.long.lead", "2s");
        env.setProperty("relay.businesses.lease.exchange", "ex");
        env.setProperty("relay.businesses.lease.routing-key", "rk");
        env.setProperty("relay.businesses.lease.lead", "300ms");
        env.setProperty("relay.businesses.lease.lease", "2s");
        env.setProperty("relay.businesses.lease.publish-timeout", "500ms");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.specs())
                .extracting(BusinessSpec::name, bs -> bs.timing().lead(), BusinessSpec::popsAhead)
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple("orders", Duration.ofMillis(20), true),
                        org.assertj.core.groups.Tuple.tuple("off", Duration.ZERO, false));
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::message)
                .containsExactlyInAnyOrder(
                        "relay.businesses.long.lead=PT2S: must be between 0 and PT1S (0: off, each entry popped once"
                                + " it is due)",
                        "relay.businesses.lease.lead=PT0.3S: must be at most a 10th of the lease (PT2S): an entry"
                                + " popped ahead waits up to the lead under its lease");
    }

    @Test
    void everyBadValueIsReportedAtOnceNamingBusinessPropertyAndValue() {
        Map.ofEntries(
                        Map.entry("shards", "0"),
                        Map.entry("threads", "257"),
                        Map.entry("batch-size", "2001"),
                        Map.entry("batch-bytes", "1023B"),
                        Map.entry("max-attempts", "0"),
                        Map.entry("dead-max-size", "0"),
                        Map.entry("dead-max-age", "0s"),
                        Map.entry("exchange", " "),
                        Map.entry("exchange-type", "fan"),
                        Map.entry("max-idle", "-1ms"),
                        Map.entry("lease", "0s"),
                        Map.entry("retry-delay", "0s"),
                        Map.entry("retry-delay-max", "-5s"),
                        Map.entry("publish-timeout", "0s"))
                .forEach((k, v) -> env.setProperty("relay.businesses.bad." + k, v));
        env.setProperty("relay.businesses.good.exchange", "ex");
        env.setProperty("relay.businesses.good.routing-key", "rk");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.isValid()).isFalse();
        assertThat(resolution.specs()).extracting(BusinessSpec::name).containsExactly("good");
        assertThat(resolution.problems()).containsOnlyKeys("bad");
        String p = "relay.businesses.bad.";
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::message)
                .containsExactly(
                        p + "shards=0: must be between 1 and 16384",
                        p + "threads=257: must be between 1 and 256",
                        p + "batch-size=2001: must be between 1 and 2000",
                        p + "batch-bytes=1023B: must be between 1024B and 536870912B",
                        p + "max-attempts=0: must be between 1 and 1000",
                        p + "dead-max-size=0: must be between 1 and 2147483647",
                        p + "dead-max-age=PT0S: must be a positive duration",
                        p + "exchange=' ': required, must not be blank",
                        p + "routing-key='': required, must not be blank",
                        p + "exchange-type=fan: must be one of [direct, topic, fanout, headers]",
                        p + "max-idle=PT-0.001S: must be a positive duration",
                        p + "lease=PT0S: must be a positive duration",
                        p + "retry-delay=PT0S: must be a positive duration",
                        p + "retry-delay-max=PT-5S: must be a positive duration",
                        p + "publish-timeout=PT0S: must be a positive duration");
        assertThat(resolution.allProblems())
                .allSatisfy(problem -> assertThat(problem.business()).isEqualTo("bad"));
        assertThat(resolution.problems().get("bad").get(0))
                .isEqualTo(new ConfigProblem("bad", p + "shards", "0", p + "shards=0: must be between 1 and 16384"));
        assertThatThrownBy(() -> BusinessSpecResolver.resolve(env, List.of()))
                .isInstanceOf(RelayConfigurationException.class)
                .satisfies(e ->
                        assertThat(((RelayConfigurationException) e).problems()).isEqualTo(resolution.allProblems()));
    }

    @Test
    void eachIntegerSettingAcceptsExactlyItsRange() {
        BusinessSpecResolver.INTEGER_RANGES.forEach((property, range) -> {
            assertThat(problemsWith(property, range.min()))
                    .as(property + " at its minimum")
                    .isEmpty();
            assertThat(problemsWith(property, range.max()))
                    .as(property + " at its maximum")
                    .isEmpty();
            assertThat(problemsWith(property, range.min() - 1))
                    .as(property + " below its minimum")
                    .containsExactly("relay.businesses.b." + property + "=" + (range.min() - 1) + ": must be between "
                            + range.min() + " and " + range.max());
            if (range.max() < Integer.MAX_VALUE) {
                assertThat(problemsWith(property, range.max() + 1))
                        .as(property + " above its maximum")
                        .hasSize(1);
            }
        });
    }

    @Test
    void theIntegerRangesTheHelmSchemaUsesAreTheOnesEnforced() {
        assertThat(BusinessSpecResolver.INTEGER_RANGES)
                .containsExactly(
                        Map.entry("shards", new Range(1, 16384)),
                        Map.entry("threads", new Range(1, 256)),
                        Map.entry("batch-size", new Range(1, 2000)),
                        Map.entry("max-attempts", new Range(1, 1000)),
                        Map.entry("dead-max-size", new Range(1, Integer.MAX_VALUE)),
                        Map.entry("max-rate", new Range(1, 10_000_000)));
        assertThatThrownBy(() -> BusinessSpecResolver.INTEGER_RANGES.put("x", new Range(0, 0)))
                .isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void batchBytesFromOneKilobyteToHalfAGigabyteAreAccepted() {
        assertThat(problems(s -> s.replace("$", "batch-bytes=1KB"))).isEmpty();
        assertThat(problems(s -> s.replace("$", "batch-bytes=512MB"))).isEmpty();
        assertThat(problems(s -> s.replace("$", "batch-bytes=536870913B")))
                .containsExactly("relay.businesses.b.batch-bytes=536870913B: must be between 1024B and 536870912B");
    }

    @Test
    void theLeaseMustOutlastThePublishTimeoutTwoLingersAndTheConfirmSweep() {
        // no lead: publish-timeout 10s + 2 x linger 8ms + 50ms sweep + 100ms settle margin = 10.166s
        assertThat(problems(s -> s.replace("$", "lease=10167ms"))).isEmpty();
        assertThat(problems(s -> s.replace("$", "lease=10166ms")))
                .containsExactly("relay.businesses.b.lease=PT10.166S: must be longer than lead (PT0S) + publish-timeout"
                        + " (PT10S) + 2 x round (PT0.008S, the linger) + 150ms (the 50ms confirm sweep and a 100ms"
                        + " settle margin) = PT10.166S, or an entry confirmed within its publish-timeout can have its"
                        + " lease taken back before its ack and be delivered again");
        assertThat(problems(s -> s.replace("$", "lease=10s"))).hasSize(1);
        assertThat(problems(s -> s.replace("$", "lease=1ms"))).hasSize(1);
        assertThat(problems(s -> s.replace("$", "max-idle=1ms")))
                .as("1 ms is positive")
                .isEmpty();
    }

    /**
     * Engine review 2026-11-28, finding 4: lease 10s, lead 1s and publish-timeout 9.5s passed both older checks
     * (lease > publish-timeout, lease >= 10 x lead), yet an entry popped ahead is published up to the lead after
     * its lease started, so a confirm within the publish timeout could come after the lease was taken back.
     */
    @Test
    void theLeaseMustOutlastTheLeadPlusThePublishTimeoutPlusTwoRounds() {
        env.setProperty("relay.businesses.ahead.exchange", "ex");
        env.setProperty("relay.businesses.ahead.routing-key", "rk");
        env.setProperty("relay.businesses.ahead.lead", "1s");
        env.setProperty("relay.businesses.ahead.lease", "10s");
        env.setProperty("relay.businesses.ahead.publish-timeout", "9500ms");
        // 1s + 9.5s + 2 x 1s + 150ms = 12.65s
        env.setProperty("relay.businesses.fits.exchange", "ex");
        env.setProperty("relay.businesses.fits.routing-key", "rk");
        env.setProperty("relay.businesses.fits.lead", "1s");
        env.setProperty("relay.businesses.fits.lease", "12651ms");
        env.setProperty("relay.businesses.fits.publish-timeout", "9500ms");
        env.setProperty("relay.businesses.edge.exchange", "ex");
        env.setProperty("relay.businesses.edge.routing-key", "rk");
        env.setProperty("relay.businesses.edge.lead", "1s");
        env.setProperty("relay.businesses.edge.lease", "12650ms");
        env.setProperty("relay.businesses.edge.publish-timeout", "9500ms");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.specs()).extracting(BusinessSpec::name).containsExactly("fits");
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::message)
                .containsExactlyInAnyOrder(
                        "relay.businesses.ahead.lease=PT10S: must be longer than lead (PT1S) + publish-timeout"
                                + " (PT9.5S) + 2 x round (PT1S, the lead) + 150ms (the 50ms confirm sweep and a 100ms"
                                + " settle margin) = PT12.65S, or an entry confirmed within its publish-timeout can"
                                + " have its lease taken back before its ack and be delivered again",
                        "relay.businesses.edge.lease=PT12.65S: must be longer than lead (PT1S) + publish-timeout"
                                + " (PT9.5S) + 2 x round (PT1S, the lead) + 150ms (the 50ms confirm sweep and a 100ms"
                                + " settle margin) = PT12.65S, or an entry confirmed within its publish-timeout can"
                                + " have its lease taken back before its ack and be delivered again");
    }

    @Test
    void aBusinessNameMustBeLowercaseLettersDigitsAndInnerDashes() {
        for (String good : List.of("a", "a-1", "0rders")) {
            assertThat(BusinessSpecResolver.resolveAll(env, List.of(new Trigger(good, "ex", "rk")))
                            .isValid())
                    .as(good)
                    .isTrue();
        }
        for (String bad : List.of("Orders", "-orders", "orders-", "or_ders")) {
            Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of(new Trigger(bad, "ex", "rk")));
            assertThat(resolution.specs()).as(bad).isEmpty();
            assertThat(resolution.problems().get(bad))
                    .extracting(ConfigProblem::message)
                    .containsExactly("business name '" + bad
                            + "': use lowercase letters, digits and '-' (it is a key under relay.businesses)");
        }
        Resolution unnamed = BusinessSpecResolver.resolveAll(env, List.of(new Trigger(null, "ex", "rk")));
        assertThat(unnamed.problems().get("null"))
                .extracting(ConfigProblem::message)
                .containsExactly(
                        "business name 'null': use lowercase letters, digits and '-' (it is a key under relay.businesses)");
    }

    @Test
    void aBusinessDeclaredByTwoTriggerBeansIsRefusedNamingBoth() {
        Trigger first = new Trigger("orders", "ex", "rk");
        OtherTrigger second = new OtherTrigger();

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of(first, second));

        assertThat(resolution.specs()).isEmpty();
        assertThat(resolution.problems().keySet()).containsExactly("orders");
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::message)
                .containsExactly("business 'orders': declared by two trigger beans (" + Trigger.class.getName() + ", "
                        + OtherTrigger.class.getName() + ")");
    }

    @Test
    void twoBusinessesOnOneSourceKeyAreRefusedTheSecondNamingTheFirst() {
        env.setProperty("relay.defaults.exchange", "ex");
        env.setProperty("relay.defaults.routing-key", "rk");
        env.setProperty("relay.businesses.alpha.source-key", "shared:k");
        env.setProperty("relay.businesses.beta.source-key", "shared:k");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.specs()).extracting(BusinessSpec::name).containsExactly("alpha");
        assertThat(resolution.allProblems())
                .extracting(ConfigProblem::message)
                .containsExactly("relay.businesses.beta.source-key=shared:k: already used by business 'alpha'");
        assertThat(resolution.problems().get("beta").get(0).business()).isEqualTo("beta");
    }

    @Test
    void aSourceKeyWithABraceIsRefusedWithTheKeyContractsReason() {
        assertThat(problems(s -> s.replace("$", "source-key=orders{1}")))
                .containsExactly("relay.businesses.b.source-key=orders{1}: source key must not contain '{' or '}'"
                        + " (they decide the Redis Cluster slot), was 'orders{1}'");
    }

    @Test
    void aValueThatCannotBeBoundIsReportedForItsBusinessWithPropertyAndValue() {
        env.setProperty("relay.businesses.orders.shards", "many");
        env.setProperty("relay.businesses.fine.exchange", "ex");
        env.setProperty("relay.businesses.fine.routing-key", "rk");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.specs()).extracting(BusinessSpec::name).containsExactly("fine");
        List<ConfigProblem> problems = resolution.problems().get("orders");
        assertThat(problems).hasSize(1);
        assertThat(problems.get(0).message())
                .as("the root cause's reason, not Spring's wrapper")
                .isEqualTo("business 'orders': relay.businesses.orders.shards=many: For input string: \"many\"");
        assertThat(resolution.problems()).containsOnlyKeys("orders");
    }

    @Test
    void businessesThatCannotBeBoundAtAllAreOneRelayWideProblem() {
        env.setProperty("relay.businesses", "orders");

        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of(new Trigger("coded", "ex", "rk")));

        assertThat(resolution.problems().keySet()).containsExactly("");
        ConfigProblem problem = resolution.problems().get("").get(0);
        assertThat(problem.property()).isEqualTo("relay.businesses");
        assertThat(problem.message()).startsWith("relay.businesses: relay.businesses=orders: ");
        assertThat(resolution.specs())
                .as("the coded business is still resolved")
                .extracting(BusinessSpec::name)
                .containsExactly("coded");
    }

    @Test
    void theRateCapAndTheOnTimeObjectiveComeFromDefaultsAndTheBusiness() {
        env.setProperty("relay.defaults.max-rate", "500");
        env.setProperty("relay.defaults.slo.on-time", "250ms");
        env.setProperty("relay.businesses.orders.exchange", "orders.ex");
        env.setProperty("relay.businesses.orders.routing-key", "orders.rk");
        env.setProperty("relay.businesses.orders.max-rate", "2000");
        env.setProperty("relay.businesses.orders.slo.target", "0.99");
        env.setProperty("relay.businesses.plain.exchange", "plain.ex");
        env.setProperty("relay.businesses.plain.routing-key", "plain.rk");

        List<BusinessSpec> specs = BusinessSpecResolver.resolve(env, List.of());

        assertThat(specs)
                .extracting(
                        BusinessSpec::name,
                        BusinessSpec::maxRate,
                        bs -> bs.slo().onTime(),
                        bs -> bs.slo().target())
                .containsExactly(
                        tuple("orders", 2000, Duration.ofMillis(250), 0.99),
                        tuple("plain", 500, Duration.ofMillis(250), 0.999));
    }

    @Test
    void withoutSettingsABusinessHasNoCapAndTheDefaultObjective() {
        env.setProperty("relay.businesses.orders.exchange", "orders.ex");
        env.setProperty("relay.businesses.orders.routing-key", "orders.rk");

        BusinessSpec spec = single(BusinessSpecResolver.resolve(env, List.of()));

        assertThat(spec.rateCapped()).isFalse();
        assertThat(spec.maxRate()).isEqualTo(BusinessSpec.NO_MAX_RATE);
        assertThat(spec.slo().onTime()).isEqualTo(Duration.ofSeconds(1));
        assertThat(spec.slo().target()).isEqualTo(0.999);
    }

    @Test
    void aBadObjectiveIsRefusedNamingBusinessPropertyAndValue() {
        assertThat(problems(s -> s.replace("$", "slo.target=1")))
                .containsExactly("relay.businesses.b.slo.target=1.0: must be a ratio between 0 and 1 (exclusive), e.g."
                        + " 0.999");
        assertThat(problems(s -> s.replace("$", "slo.target=0"))).hasSize(1);
        assertThat(problems(s -> s.replace("$", "slo.on-time=0s")))
                .containsExactly("relay.businesses.b.slo.on-time=PT0S: must be a positive duration");
        assertThat(problems(s -> s.replace("$", "max-rate=0")))
                .containsExactly("relay.businesses.b.max-rate=0: must be between 1 and 10000000");
    }

    @Test
    void noBusinessesMeansNoSpecsAndNoProblems() {
        Resolution resolution = BusinessSpecResolver.resolveAll(env, List.of());

        assertThat(resolution.isValid()).isTrue();
        assertThat(resolution.specs()).isEmpty();
        assertThat(resolution.problems()).isEmpty();
        assertThat(resolution.allProblems()).isEmpty();
    }

    /** Messages of the problems of business "b", configured validly but for one line {@code property=value}. */
    private List<String> problems(Function<String, String> line) {
        MockEnvironment own = new MockEnvironment();
        own.setProperty("relay.businesses.b.exchange", "ex");
        own.setProperty("relay.businesses.b.routing-key", "rk");
        String[] kv = line.apply("$").split("=", 2);
        own.setProperty("relay.businesses.b." + kv[0], kv[1]);
        return BusinessSpecResolver.resolveAll(own, List.of()).allProblems().stream()
                .map(ConfigProblem::message)
                .toList();
    }

    private List<String> problemsWith(String property, int value) {
        return problems(s -> s.replace("$", property + "=" + value));
    }

    private static BusinessSpec single(List<BusinessSpec> specs) {
        assertThat(specs).hasSize(1);
        return specs.get(0);
    }

    /** A coded business; every value left null comes from configuration. */
    static class Trigger extends AbstractDelayedMsgScanTrigger {

        private final String business;
        private final String sourceKey;
        private final Integer threads;
        private final String prefix;
        private final String exchange;
        private final String routingKey;
        private final Integer shards;

        Trigger(
                String business,
                String sourceKey,
                Integer threads,
                String prefix,
                String exchange,
                String routingKey,
                Integer shards) {
            this.business = business;
            this.sourceKey = sourceKey;
            this.threads = threads;
            this.prefix = prefix;
            this.exchange = exchange;
            this.routingKey = routingKey;
            this.shards = shards;
        }

        Trigger(String business) {
            this(business, null, null, null, null, null, null);
        }

        Trigger(String business, String exchange, String routingKey) {
            this(business, null, null, null, exchange, routingKey, null);
        }

        @Override
        public String getBusiness() {
            return business;
        }

        @Override
        public String getSourceKey() {
            return sourceKey;
        }

        @Override
        public Integer getThreadNum() {
            return threads;
        }

        @Override
        public String getThreadNamePrefix() {
            return prefix;
        }

        @Override
        public String getExchange() {
            return exchange;
        }

        @Override
        public String getRoutingKey() {
            return routingKey;
        }

        @Override
        public Integer getShards() {
            return shards;
        }
    }

    /** A second bean declaring "orders". */
    static class OtherTrigger extends AbstractDelayedMsgScanTrigger {

        @Override
        public String getBusiness() {
            return "orders";
        }
    }
}
