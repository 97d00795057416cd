package io.delayrelay.app.polyglot;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.MetaFields;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.api.ShardSelector;
import io.delayrelay.app.polyglot.ProducerExamples.Vector;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.data.redis.connection.RedisConnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The producers for other languages in examples/producers/, run as users run them: the shell (redis-cli), Python and
 * Node files are called as commands against the real Redis; the relay delivers what they schedule to a real queue,
 * byte for byte; the Java producer cancels and reschedules what they scheduled by id, and they cancel and reschedule
 * what it scheduled; each gives the shard test vectors of docs/redis-contract.md. A key name, the shard rule or a
 * script argument changed in Java but not in the examples fails here. The Go file is checked for the contract's names
 * only: no Go toolchain runs in this build, and its header and the contract document say so.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ReadmeRecipesTest {

    private static final int SHARDS = 7;
    private static final String LATER_MS = "60000";
    /** Long enough that only a wake-up published by a recipe or the producer explains a prompt delivery. */
    private static final String MAX_IDLE = "60s";

    private static final Duration PROMPT = Duration.ofSeconds(10);

    private final RelayTestKit kit = new RelayTestKit();
    private final ProducerExamples examples = ProducerExamples.load();
    private final Map<String, String> businessOf = new HashMap<>();
    private final Map<String, BlockingQueue<Received>> receivedOf = new HashMap<>();
    private RedisDelayedMessageProducer producer;

    @BeforeAll
    void startRelay() {
        Map<String, Object> properties = kit.baseProperties();
        String exchange = kit.exchange("polyglot");
        for (String language : List.of("shell", "python", "node")) {
            String business = kit.business("poly-" + language);
            RelayTestKit.business(properties, business, exchange, business, "shards", SHARDS, "max-idle", MAX_IDLE);
            receivedOf.put(language, kit.consume(kit.queue(exchange, business)));
            businessOf.put(language, business);
        }
        kit.startRelay(properties);
        // the examples read M from K:meta: wait until the relay wrote it, as a producer starting after it would
        await().atMost(Duration.ofSeconds(10)).until(() -> businessOf.values().stream()
                .allMatch(b -> Integer.toString(SHARDS).equals(hget(keysOf(b).meta(), MetaFields.SHARDS))));
        producer = kit.producer();
    }

    @AfterAll
    void stop() {
        kit.close();
    }

    @Test
    void theContractLinksAnExamplePerLanguageAndGivesShardVectorsWithAHighBitCrc() {
        String contract = ProducerExamples.read(examples.root().resolve(ProducerExamples.CONTRACT_DOC));
        for (String language : List.of("shell", "python", "node", "go")) {
            assertThat(examples.file(language)).as("%s example", language).isRegularFile();
            assertThat(contract)
                    .as("%s links the %s example", ProducerExamples.CONTRACT_DOC, language)
                    .contains(
                            "](../examples/producers/" + examples.file(language).getFileName() + ")");
        }
        assertThat(examples.sources().get("go"))
                .as("the Go example says plainly that the build does not run it")
                .contains("NOT run by the build");
        assertThat(contract).contains("The Go file is not run by the build");
        assertThat(examples.vectors())
                .hasSizeGreaterThanOrEqualTo(4)
                .anySatisfy(v -> assertThat(v.key()).as("a non-ASCII key").isNotEqualTo(asciiOnly(v.key())))
                .anySatisfy(v -> assertThat(v.crc32())
                        .as("a CRC32 with the high bit set shows signed-CRC32 bugs")
                        .isGreaterThan(Integer.MAX_VALUE));
    }

    @Test
    void theContractShowsEachExampleAsItIs() {
        assertThat(examples.excerpts())
                .extracting(ProducerExamples.Excerpt::file)
                .containsExactlyInAnyOrder(ProducerExamples.FILES.keySet().stream()
                        .map(examples::file)
                        .toArray(Path[]::new));
        for (ProducerExamples.Excerpt excerpt : examples.excerpts()) {
            assertThat(ProducerExamples.read(excerpt.file()))
                    .as("%s shows this text of %s", ProducerExamples.CONTRACT_DOC, excerpt.file())
                    .contains(excerpt.code());
        }
    }

    @Test
    void javaGivesTheContractShardVectors() {
        for (Vector v : examples.vectors()) {
            byte[] key = v.key().getBytes(StandardCharsets.UTF_8);
            assertThat(ShardSelector.crc32(key)).as("CRC32 of %s", v.key()).isEqualTo(v.crc32());
            assertThat(ShardSelector.shardOf(key, 16))
                    .as("shard of 16 of %s", v.key())
                    .isEqualTo(v.shardOf16());
            assertThat(ShardSelector.shardOf(key, 7))
                    .as("shard of 7 of %s", v.key())
                    .isEqualTo(v.shardOf7());
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shell", "python", "node"})
    void theExampleGivesTheContractShardVectors(String language) {
        RecipeRunner recipe = RecipeRunner.of(language, examples);
        List<Vector> vectors = examples.vectors();
        String[] keys = vectors.stream().map(Vector::key).toArray(String[]::new);
        assertThat(recipe.run(concat("shard", "16", keys)).lines())
                .containsExactlyElementsOf(vectors.stream()
                        .map(v -> Integer.toString(v.shardOf16()))
                        .toList());
        assertThat(recipe.run(concat("shard", "7", keys)).lines())
                .containsExactlyElementsOf(vectors.stream()
                        .map(v -> Integer.toString(v.shardOf7()))
                        .toList());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shell", "python", "node"})
    void examplesAndTheJavaProducerScheduleCancelAndRescheduleEachOthersEntries(String language) throws Exception {
        RecipeRunner recipe = RecipeRunner.of(language, examples);
        String business = businessOf.get(language);
        String k = keysOf(business).sourceKey();
        // quotes, a backslash, shell metacharacters, non-ASCII, a newline: what a shell or a JSON payload may hold
        String body = "{\"order\":\"1001\",\"note\":\"naïve café ✓ $HOME \\\\ 'q' `x` %s\"}\nline 2 of " + language;
        String plain = body.formatted("plain");

        // due now, while the relay's workers sleep up to max-idle: only the recipe's wake-up explains a prompt delivery
        long plainDue = Long.parseLong(recipe.run("schedule_plain", k, plain, "0"));
        assertThat(plainDue).isLessThanOrEqualTo(kit.redisNowMs());
        assertPromptlyDelivered(language, plain, "");
        recipe.run("schedule_by_id", k, "by-recipe-0", body.formatted("due now"), "0");
        assertPromptlyDelivered(language, body.formatted("due now"), "by-recipe-0");

        recipe.run("schedule_plain", k, "plain, cancelled by Java", LATER_MS);
        assertThat(producer.cancel(business, "plain, cancelled by Java"))
                .as("Java cancels a plain ZADD")
                .isTrue();

        recipe.run("schedule_by_id", k, "by-recipe-1", body.formatted("cancelled"), LATER_MS);
        assertThat(producer.cancelById(business, "by-recipe-1"))
                .as("Java cancels by id")
                .isTrue();
        assertThat(producer.cancelById(business, "by-recipe-1")).isFalse();

        recipe.run("schedule_by_id", k, "by-recipe-2", body.formatted("rescheduled by Java"), LATER_MS);
        assertThat(producer.rescheduleById(business, "by-recipe-2", Instant.ofEpochMilli(kit.redisNowMs())))
                .isTrue();

        producer.scheduleById(
                business, "by-java-3", body.formatted("cancelled"), Instant.ofEpochMilli(kit.redisNowMs() + 60_000));
        assertThat(recipe.run("cancel_by_id", k, "by-java-3"))
                .as("the recipe cancels by id")
                .isEqualTo("1");
        assertThat(recipe.run("cancel_by_id", k, "by-java-3")).isEqualTo("0");

        producer.scheduleById(
                business,
                "by-java-4",
                body.formatted("rescheduled by " + language),
                Instant.ofEpochMilli(kit.redisNowMs() + 60_000));
        long now = kit.redisNowMs();
        assertThat(Long.parseLong(recipe.run("reschedule_by_id", k, "by-java-4", "0")))
                .as("due on Redis time")
                .isBetween(now, now + 5_000);

        recipe.run("schedule_by_id", k, "by-recipe-5", body.formatted("version 1"), LATER_MS);
        recipe.run("schedule_by_id", k, "by-recipe-5", body.formatted("version 2"), LATER_MS);
        assertThat(recipe.run("reschedule_by_id", k, "by-recipe-5", "0")).isNotEqualTo("-1");

        assertThat(recipe.run("reschedule_by_id", k, "never-scheduled", "0")).isEqualTo("-1");
        assertThat(recipe.run("cancel_by_id", k, "never-scheduled")).isEqualTo("0");

        Map<String, String> expected = new TreeMap<>(Map.of(
                hex(body.formatted("rescheduled by Java")), "by-recipe-2",
                hex(body.formatted("rescheduled by " + language)), "by-java-4",
                hex(body.formatted("version 2")), "by-recipe-5"));
        List<Received> all = RelayTestKit.collect(
                receivedOf.get(language), expected.size(), Duration.ofSeconds(15), Duration.ofSeconds(1));
        Map<String, String> delivered = all.stream()
                .collect(Collectors.toMap(
                        r -> hex(r.body()), ReadmeRecipesTest::id, (a, b) -> a + " delivered twice", TreeMap::new));
        assertThat(delivered)
                .as("exactly these bodies, byte for byte, each once, with its id")
                .isEqualTo(expected);
        for (Received r : all) {
            byte[] shardingKey = id(r).isEmpty() ? r.body() : id(r).getBytes(StandardCharsets.UTF_8);
            assertThat(r.header(RelayHeaders.SHARD))
                    .as("the recipe's shard is Java's")
                    .isEqualTo(ShardSelector.shardOf(shardingKey, SHARDS));
        }
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            assertThat(kit.scheduled(business)).as("nothing left scheduled").isZero();
            assertThat(kit.countAll(business, "inflight"))
                    .as("nothing left in flight")
                    .isZero();
            assertThat(kit.keysOf(business)).as("no payload left behind").noneMatch(key -> key.endsWith(":payloads"));
        });
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shell", "python", "node"})
    void examplesFindEntriesScheduledUnderAnEarlierShardCountAndKeepOneCopy(String language) {
        RecipeRunner recipe = RecipeRunner.of(language, examples);
        String business = kit.business("poly-reshard-" + language);
        DelayQueueKeys keys = keysOf(business);
        RedisDelayedMessageProducer javaProducer =
                new RedisDelayedMessageProducer(kit.redisFactory(), 16, Duration.ZERO, DelayQueueKeys::forBusiness);
        long later = kit.redisNowMs() + 600_000;
        for (String id : List.of("moved-1", "cancelled-2", "replaced-3")) {
            javaProducer.scheduleById(business, id, "under 16 shards", Instant.ofEpochMilli(later));
        }
        // what the relay writes when its shard count goes from 16 to 7
        hset(keys.meta(), MetaFields.SHARDS, "7");
        hset(keys.meta(), MetaFields.DRAINING, "16");
        hset(keys.meta(), MetaFields.HISTORY, "16");

        assertThat(recipe.run("reschedule_by_id", keys.sourceKey(), "moved-1", "300000"))
                .isNotEqualTo("-1");
        assertThat(recipe.run("cancel_by_id", keys.sourceKey(), "cancelled-2")).isEqualTo("1");
        recipe.run("schedule_by_id", keys.sourceKey(), "replaced-3", "under 7 shards", "300000");

        assertThat(copies(keys, "moved-1")).hasSize(1).allSatisfy((shard, due) -> assertThat(due)
                .isLessThan(later));
        assertThat(copies(keys, "cancelled-2")).isEmpty();
        assertThat(copies(keys, "replaced-3"))
                .as("one live copy, under the new count")
                .containsOnlyKeys(ShardSelector.shardOf("replaced-3", 7));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shell", "python", "node"})
    void examplesAttachAnExpiryAndHeadersThatArriveUnchangedAndRefuseRelayHeaders(String language) throws Exception {
        RecipeRunner recipe = RecipeRunner.of(language, examples);
        String business = businessOf.get(language);
        String k = keysOf(business).sourceKey();
        String traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        String body = "{\"code\":\"123456\",\"via\":\"" + language + " ✓\"}";

        recipe.run(
                "schedule_by_id",
                k,
                "options-1",
                body,
                "0",
                "+60000",
                "traceparent",
                traceparent,
                "tracestate",
                "congo=t61rcWkgMzE",
                "tenant",
                "acmé $HOME 'q'");
        Received r = receivedOf.get(language).poll(PROMPT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(r).as("delivered promptly").isNotNull();
        assertThat(hex(r.body()))
                .as("the message byte for byte, without the options")
                .isEqualTo(hex(body));
        assertThat(r.headers())
                .containsEntry("traceparent", traceparent)
                .containsEntry("tracestate", "congo=t61rcWkgMzE")
                .containsEntry("tenant", "acmé $HOME 'q'")
                .containsEntry(RelayHeaders.ID, "options-1")
                .containsEntry(RelayHeaders.BUSINESS, business);

        assertThatThrownBy(() -> recipe.run("schedule_by_id", k, "options-2", body, "60000", "", "X-Delay-Id", "x"))
                .as("a relay header is refused")
                .hasMessageContaining("refused");
        assertThat(copies(keysOf(business), "options-2"))
                .as("nothing scheduled")
                .isEmpty();
    }

    @Test
    void everyExampleBuildsTheKeysOfTheJavaContractAndCallsItsScripts() {
        DelayQueueKeys keys = DelayQueueKeys.of("K");
        List<String> suffixes = List.of(keys.payloads(0), keys.inflight(0), keys.attempts(0), keys.dead(0)).stream()
                .map(key -> key.substring(key.indexOf('}')))
                .toList();
        examples.sources().forEach((language, code) -> {
            for (String suffix : suffixes) {
                assertThat(code)
                        .as("%s example builds {K:i}%s", language, suffix.substring(1))
                        .containsPattern(word(suffix));
            }
            for (String name : List.of(
                    keys.meta().substring(1), keys.wake().substring(1), MetaFields.SHARDS, MetaFields.HISTORY)) {
                assertThat(code).as("%s example uses %s", language, name).containsPattern(word(name));
            }
            for (String script : List.of("schedule", "reschedule", "cancel")) {
                assertThat(code)
                        .as("%s example runs %s.lua", language, script)
                        .containsPattern("['\" ]" + script + "['\" ]");
                assertThat(Files.isRegularFile(examples.root().resolve("contract/" + script + ".lua")))
                        .isTrue();
            }
        });
    }

    private void assertPromptlyDelivered(String language, String body, String id) throws InterruptedException {
        Received r = receivedOf.get(language).poll(PROMPT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(r)
                .as("delivered within %s (max-idle %s): woken by the wake-up", PROMPT, MAX_IDLE)
                .isNotNull();
        assertThat(hex(r.body())).as("byte for byte").isEqualTo(hex(body));
        assertThat(id(r)).isEqualTo(id);
        byte[] shardingKey = id.isEmpty() ? r.body() : id.getBytes(StandardCharsets.UTF_8);
        assertThat(r.header(RelayHeaders.SHARD))
                .as("the recipe's shard is Java's")
                .isEqualTo(ShardSelector.shardOf(shardingKey, SHARDS));
    }

    private Map<Integer, Long> copies(DelayQueueKeys keys, String member) {
        Map<Integer, Long> found = new TreeMap<>();
        try (RedisConnection c = kit.redis()) {
            for (int shard = 0; shard < 16; shard++) {
                Double score =
                        c.zSetCommands().zScore(DelayQueueKeys.bytes(keys.shard(shard)), DelayQueueKeys.bytes(member));
                if (score != null) {
                    found.put(shard, score.longValue());
                }
            }
        }
        return found;
    }

    private static DelayQueueKeys keysOf(String business) {
        return DelayQueueKeys.forBusiness(business);
    }

    private String hget(String key, String field) {
        try (RedisConnection c = kit.redis()) {
            byte[] value = c.hashCommands().hGet(DelayQueueKeys.bytes(key), DelayQueueKeys.bytes(field));
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }

    private void hset(String key, String field, String value) {
        try (RedisConnection c = kit.redis()) {
            c.hashCommands().hSet(DelayQueueKeys.bytes(key), DelayQueueKeys.bytes(field), DelayQueueKeys.bytes(value));
        }
    }

    private static String id(Received r) {
        Object id = r.headers().get(RelayHeaders.ID);
        return id == null ? "" : id.toString();
    }

    private static String hex(String text) {
        return hex(text.getBytes(StandardCharsets.UTF_8));
    }

    private static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }

    /** The text, not followed by more of a name (":payload" must not match ":payloads"). */
    private static String word(String text) {
        return Pattern.quote(text) + "(?![\\w-])";
    }

    private static String asciiOnly(String s) {
        return s.chars()
                .filter(c -> c < 128)
                .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append)
                .toString();
    }

    private static String[] concat(String a, String b, String... rest) {
        String[] all = new String[rest.length + 2];
        all[0] = a;
        all[1] = b;
        System.arraycopy(rest, 0, all, 2, rest.length);
        return all;
    }
}
