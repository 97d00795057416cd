package io.delayrelay.app.ops;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.api.RedisDelayedMessageProducer;
import io.delayrelay.api.RelayHeaders;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The operator console in a real headless chromium against the real Redis and RabbitMQ: its figures are the
 * endpoint's; without a token no entry and no body is in the page; every write asks first in the page's dialog,
 * naming the count (purge all wants the business name typed); a dead letter replayed from the page arrives in a
 * real queue and the audit line names the operator whose token the page holds; a letter the late policy expired shows
 * its reason (how late, the limit); a hostile member stays text and a
 * nanosecond score does not break the Scheduled tab. Screenshots land in target/console (docs/console.png is one).
 */
@ExtendWith(OutputCaptureExtension.class)
class ConsoleBrowserTest {

    private static final String TOKEN = "console-ops-token";
    private static final String ALICE = "alice-console-token-42";
    /** A member a producer could write: text in the page, never markup. */
    private static final String HOSTILE = "<img src=x onerror=\"window.__pwned=1\">";
    /** A score in nanoseconds: out of the range of a JavaScript Date. */
    private static final long NANOSECOND_SCORE = 1_764_000_000_000_000_000L;

    private static final Path SCREENSHOTS = Path.of("target", "console");
    private static final Duration PAGE_WAIT = Duration.ofSeconds(20);
    /** Columns of the overview table. */
    private static final int STATE = 1,
            DUE = 2,
            SCHEDULED = 3,
            COLD = 4,
            INFLIGHT = 5,
            DEAD = 6,
            RELAYED_PER_MINUTE = 8,
            ON_TIME = 10,
            SHARDS = 11;

    private final RelayTestKit kit = new RelayTestKit();
    private WebRelay relay;
    private HeadlessChromium chromium;

    @AfterEach
    void cleanUp() {
        if (chromium != null) {
            chromium.close();
        }
        if (relay != null) {
            relay.close();
        }
        kit.close();
    }

    @Test
    void showsTheEndpointsFiguresAndReplaysADeadLetterIntoARealQueue(CapturedOutput output) throws Exception {
        String orders = kit.business("orders");
        String ordersExchange = kit.exchange("orders");
        String reminders = kit.business("reminders");
        String invoices = kit.business("invoices");
        String invoicesExchange = kit.exchange("invoices");
        BlockingQueue<Received> invoicesQueue = kit.consume(kit.queue(invoicesExchange, "invoice.due"));
        RedisDelayedMessageProducer producer = kit.producer();
        long now = kit.redisNowMs();
        // orders: nothing bound to its routing key yet, so what falls due dies as unroutable
        for (int i = 1; i <= 3; i++) {
            producer.scheduleByIdAfter(orders, "order-100" + i, orderJson(100 + i, "cancel-unpaid"), Duration.ZERO);
        }
        for (int i = 1; i <= 12; i++) {
            producer.scheduleById(
                    orders,
                    "order-20" + (10 + i),
                    orderJson(2000 + i, "cancel-unpaid"),
                    Instant.ofEpochMilli(now + i * 7 * 60_000L));
        }
        producer.schedule(orders, HOSTILE, Instant.ofEpochMilli(now + 3_600_000L));
        // orders keep max-lateness 5m: one 20 minutes overdue when the relay starts is dead with reason expired
        producer.scheduleById(
                orders, "order-0907", orderJson(907, "cancel-unpaid"), Instant.ofEpochMilli(now - 20 * 60_000L));
        try (RedisConnection c = kit.redis()) {
            c.zSetCommands()
                    .zAdd(
                            DelayQueueKeys.forBusiness(orders).shard(0).getBytes(StandardCharsets.UTF_8),
                            NANOSECOND_SCORE,
                            "scored-in-nanoseconds".getBytes(StandardCharsets.UTF_8));
        }
        // reminders: paused, so due entries wait
        for (int i = 1; i <= 5; i++) {
            producer.schedule(
                    reminders, "remind user-" + i + " about their cart", Instant.ofEpochMilli(now - i * 40_000L));
            producer.schedule(
                    reminders, "remind user-" + (10 + i) + " to review", Instant.ofEpochMilli(now + i * 3_600_000L));
        }
        // reminders go cold after 1 h: the four due in 2-5 h and three reviews due in a week are moved to cold blocks
        for (int i = 1; i <= 3; i++) {
            producer.scheduleById(
                    reminders,
                    "review-user-" + i,
                    "{\"user\":" + i + ",\"action\":\"review-reminder\"}",
                    Instant.ofEpochMilli(now + 7 * 86_400_000L + i * 60_000L));
        }
        Map<String, Object> properties = kit.baseProperties();
        RelayTestKit.business(properties, orders, ordersExchange, "order.due", "max-lateness", "5m");
        RelayTestKit.business(
                properties, reminders, kit.exchange("reminders"), "reminder.due", "paused", true, "cold-after", "1h");
        // invoices: capped fleet-wide at 60 messages/s, on time within 1 s: a burst of 240 due at once is late
        RelayTestKit.business(
                properties,
                invoices,
                invoicesExchange,
                "invoice.due",
                "shards",
                4,
                "max-rate",
                60,
                "slo.on-time",
                "1s");
        properties.put("relay.ops.token", TOKEN);
        properties.put("relay.ops.tokens.alice", ALICE);
        properties.put("relay.metrics.sample-interval", "200ms");
        relay = new WebRelay(properties);
        await().atMost(Duration.ofSeconds(15)).until(() -> kit.countAll(orders, "dead") == 4);

        chromium = new HeadlessChromium(1440, 900);
        var browser = chromium.driver;
        browser.get("http://127.0.0.1:" + relay.managementPort + RelayConsoleServlet.PATH);

        // overview: every business, its figures equal to the endpoint's
        for (String business : List.of(orders, reminders, invoices)) {
            await().atMost(PAGE_WAIT).untilAsserted(() -> {
                JsonNode view = relay.get("/actuator/relay/" + business).json();
                List<String> cells = overviewCells(browser, business);
                assertThat(cells).as("overview row of %s", business).hasSize(13);
                JsonNode backlog = view.get("backlog");
                assertThat(cells.get(DUE)).isEqualTo(figure(backlog.get("due").asLong()));
                assertThat(cells.get(SCHEDULED))
                        .isEqualTo(figure(backlog.get("scheduled").asLong()));
                assertThat(cells.get(COLD)).isEqualTo(figure(backlog.get("cold").asLong()));
                assertThat(cells.get(INFLIGHT))
                        .isEqualTo(figure(backlog.get("inflight").asLong()));
                assertThat(cells.get(DEAD)).isEqualTo(figure(backlog.get("dead").asLong()));
                assertThat(cells.get(SHARDS))
                        .isEqualTo(Integer.toString(view.get("shards").asInt()));
                assertThat(cells.get(STATE)).startsWith(view.get("paused").asBoolean() ? "paused" : "relaying");
            });
        }
        assertThat(overviewCells(browser, orders).get(DEAD)).isEqualTo("4");
        assertThat(overviewCells(browser, orders).get(SCHEDULED)).isEqualTo("14");
        assertThat(overviewCells(browser, reminders).get(DUE)).isEqualTo("5");
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            assertThat(overviewCells(browser, reminders).get(COLD)).isEqualTo("7");
            assertThat(overviewCells(browser, reminders).get(SCHEDULED)).isEqualTo("1");
            assertThat(tile(browser, "Cold")).isEqualTo("7");
        });
        assertThat(overviewCells(browser, invoices).get(SHARDS)).isEqualTo("4");
        // relayed per minute: the page diffs its readings of the relay's counters (one every 5 s)
        for (int i = 0; i < 240; i++) {
            producer.scheduleAfter(invoices, "invoice-" + i, Duration.ZERO);
        }
        List<Received> invoiced = RelayTestKit.collect(invoicesQueue, 240, Duration.ofSeconds(30), Duration.ZERO);
        assertThat(invoiced).hasSize(240);
        // the cap: 240 at 60/s take 3 s or more after the first burst of 6; never faster
        long[] stamps = invoiced.stream()
                .mapToLong(r -> r.header(RelayHeaders.RELAYED_AT))
                .sorted()
                .toArray();
        assertThat(stamps[239] - stamps[0]).as("240 invoices capped at 60/s").isGreaterThanOrEqualTo(3_500);
        assertThat(overviewCells(browser, invoices).get(STATE)).contains("capped at 60/s");
        assertThat(overviewCells(browser, orders).get(STATE)).doesNotContain("capped");
        // on time: the share within slo.on-time from the lag histogram's bucket there; the capped burst made most of
        // the invoices later than 1 s, below the objective (99.9 %)
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            JsonNode view = relay.get("/actuator/relay/" + invoices).json();
            long within = 0;
            long all = view.get("local").get("lagCount").asLong();
            for (JsonNode bucket : view.get("local").get("lagBuckets")) {
                if (bucket.get(0).asLong() == 1_000) {
                    within = bucket.get(1).asLong();
                }
            }
            assertThat(all).isEqualTo(240);
            assertThat(within).isLessThan(240);
            assertThat(overviewCells(browser, invoices).get(ON_TIME))
                    .isEqualTo(String.format("%.2f %%", Math.floor(within * 10000.0 / all) / 100));
        });
        await().atMost(PAGE_WAIT)
                .ignoreExceptionsInstanceOf(IndexOutOfBoundsException.class)
                .untilAsserted(() -> assertThat(overviewCells(browser, invoices).get(RELAYED_PER_MINUTE))
                        .matches("[0-9,]+")
                        .isNotEqualTo("0"));
        screenshot(browser, "console-overview.png");

        // without the token: no entry, no member, no body in the page; the tables say why
        browser.findElement(By.cssSelector("#tabs button[data-tab='dead']")).click();
        new Select(browser.findElement(By.id("dead-business"))).selectByValue(orders);
        await().atMost(PAGE_WAIT).until(() -> !browser.findElements(By.cssSelector("#dead tbody td.locked-listing"))
                .isEmpty());
        assertThat(browser.findElement(By.cssSelector("#dead tbody")).getText())
                .isEqualTo("Entries and dead letters show message bodies: unlock with an operator token to see them.");
        assertThat(browser.findElements(By.cssSelector("#dead tbody tr[data-member]")))
                .isEmpty();
        assertThat(browser.getPageSource())
                .doesNotContain("order-1001")
                .doesNotContain("order 101")
                .doesNotContain("cancel-unpaid");
        screenshot(browser, "console-locked.png");

        // token once per session: entries, bodies and writes appear; the page names the operator
        browser.findElement(By.id("token-input")).sendKeys(ALICE);
        browser.findElement(By.id("token-save")).click();
        await().atMost(PAGE_WAIT)
                .until(() -> browser.findElements(By.cssSelector("#dead tbody tr[data-member='order-1001']")).stream()
                        .anyMatch(r -> r.getText().contains("\"order\":101")));
        assertThat(browser.executeScript("return sessionStorage.getItem('delay-relay-ops-token')"))
                .isEqualTo(ALICE);
        await().atMost(PAGE_WAIT)
                .until(() -> browser.findElement(By.id("token-state")).getText().equals("operator: alice"));
        WebElement deadRow = browser.findElement(By.cssSelector("#dead tbody tr[data-member='order-1001']"));
        assertThat(deadRow.findElements(By.tagName("td")).get(3).getText()).isEqualTo("1");
        assertThat(deadRow.findElements(By.tagName("td")).get(4).getText())
                .as("original due: the time it was scheduled for, not the time it died")
                .isNotEqualTo("—")
                .isNotEmpty();
        assertThat(deadRow.findElements(By.tagName("td")).get(1).getText()).contains(AuditRef.of("order-1001"));
        assertThat(deadRow.findElements(By.tagName("td")).get(2).getText()).startsWith("unroutable: 312 NO_ROUTE");
        // the late policy's letter: its reason says how late it was and the limit, without the attempt count
        List<WebElement> expired = browser.findElement(By.cssSelector("#dead tbody tr[data-member='order-0907']"))
                .findElements(By.tagName("td"));
        assertThat(expired.get(2).getText()).matches("expired: 1[2-9][0-9]{5} ms late, max-lateness 300000 ms");
        assertThat(expired.get(3).getText()).as("never attempted").isEqualTo("0");
        assertThat(expired.get(6).getText()).contains("\"order\":907");
        assertThat(browser.findElements(By.cssSelector("#dead-reason option")))
                .extracting(WebElement::getText)
                .anyMatch(o -> o.startsWith("expired: "));
        screenshot(browser, "console-dead-letters.png");

        // replay one from the page: the dialog asks first; cancelled, nothing happens
        BlockingQueue<Received> ordersQueue = kit.consume(kit.queue(ordersExchange, "order.due"));
        deadRow.findElement(By.xpath(".//button[text()='Replay']")).click();
        WebElement dialog = browser.findElement(By.id("confirm"));
        await().atMost(PAGE_WAIT).until(dialog::isDisplayed);
        assertThat(browser.findElement(By.id("confirm-question")).getText())
                .isEqualTo("Replay 1 dead letter of " + orders + "? It is delivered again now.");
        browser.findElement(By.id("confirm-cancel")).click();
        await().atMost(PAGE_WAIT).until(() -> !dialog.isDisplayed());
        assertThat(RelayTestKit.collect(ordersQueue, 1, Duration.ofMillis(700), Duration.ZERO))
                .isEmpty();
        assertThat(kit.countAll(orders, "dead")).isEqualTo(4);
        // confirmed: it arrives in a real queue, the others stay dead, the audit line names alice
        deadRow.findElement(By.xpath(".//button[text()='Replay']")).click();
        await().atMost(PAGE_WAIT).until(dialog::isDisplayed);
        browser.findElement(By.id("confirm-ok")).click();
        List<Received> replayed = RelayTestKit.collect(ordersQueue, 1, Duration.ofSeconds(10), Duration.ofMillis(300));
        assertThat(replayed)
                .extracting(Received::text)
                .containsExactly(new String(orderJson(101, "cancel-unpaid"), StandardCharsets.UTF_8));
        awaitRows(browser, "dead", 3);
        assertThat(browser.findElement(By.id("notice")).getText()).contains("1 replayed");
        assertThat(relay.get("/actuator/relay/" + orders + "/dead", TOKEN)
                        .json()
                        .get("count")
                        .asInt())
                .isEqualTo(3);
        assertThat(output.getOut())
                .contains("business=" + orders + ": 1 dead letter(s) replayed (members [" + AuditRef.of("order-1001")
                        + " (10 B)]) by alice from 127.0.0.1");

        // scheduled: a hostile member is text, a nanosecond score is shown as a score, the tab still works
        browser.findElement(By.cssSelector("#tabs button[data-tab='scheduled']"))
                .click();
        new Select(browser.findElement(By.id("scheduled-business"))).selectByValue(orders);
        awaitRows(browser, "scheduled", 14);
        assertThat(browser.findElements(By.cssSelector("#scheduled tbody td.member")))
                .anyMatch(td -> td.getText().startsWith(HOSTILE));
        assertThat(browser.findElements(By.cssSelector("#scheduled tbody img"))).isEmpty();
        assertThat(browser.executeScript("return window.__pwned === undefined")).isEqualTo(true);
        assertThat(browser.findElement(By.cssSelector("#scheduled tbody tr[data-member='scored-in-nanoseconds']"))
                        .getText())
                .contains("score 1764000000000000000");
        screenshot(browser, "console-scheduled-hostile.png");

        // scheduled: search by id prefix, bodies shown with the token
        browser.findElement(By.id("scheduled-search")).sendKeys("order-202");
        searchScheduled(browser, 3);
        assertThat(browser.findElements(By.cssSelector("#scheduled tbody tr[data-member]")))
                .extracting(r -> r.getAttribute("data-member"))
                .containsExactly("order-2020", "order-2021", "order-2022");
        screenshot(browser, "console-scheduled.png");

        // scheduled: cold entries are listed after the hot ones in due order, marked cold, with their bodies; a search
        // by id finds one
        browser.findElement(By.id("scheduled-search")).clear();
        new Select(browser.findElement(By.id("scheduled-business"))).selectByValue(reminders);
        awaitRows(browser, "scheduled", 13);
        List<WebElement> rows = browser.findElements(By.cssSelector("#scheduled tbody tr[data-member]"));
        assertThat(rows.subList(0, 6)).allSatisfy(r -> assertThat(r.findElements(By.cssSelector(".pill.cold")))
                .isEmpty());
        assertThat(rows.subList(6, 13)).allSatisfy(r -> assertThat(
                        r.findElement(By.cssSelector(".pill.cold")).getText())
                .isEqualTo("cold"));
        assertThat(rows.get(12).getAttribute("data-member")).isEqualTo("review-user-3");
        assertThat(rows.get(12).getText()).contains("\"action\":\"review-reminder\"");
        screenshot(browser, "console-scheduled-cold.png");
        browser.findElement(By.id("scheduled-search")).sendKeys("review-user-2");
        searchScheduled(browser, 1);
        WebElement found = browser.findElement(By.cssSelector("#scheduled tbody tr[data-member='review-user-2']"));
        assertThat(found.findElement(By.cssSelector(".pill.cold")).getText()).isEqualTo("cold");
        assertThat(found.getText()).contains("\"user\":2");

        browser.findElement(By.cssSelector("#tabs button[data-tab='overview']")).click();
        await().atMost(PAGE_WAIT)
                .ignoreExceptionsInstanceOf(IndexOutOfBoundsException.class)
                .untilAsserted(() ->
                        assertThat(overviewCells(browser, orders).get(DEAD)).isEqualTo("3"));
        // Resume only lifts an operator's pause: a business paused only by configuration says so, without a button
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            assertThat(stateButtons(browser, reminders)).isEmpty();
            assertThat(overviewCells(browser, reminders).get(STATE)).isEqualTo("paused by configuration");
            assertThat(stateButtons(browser, orders)).containsExactly("Pause");
        });
        assertThat(relay.post("/actuator/relay/" + reminders + "/pause", TOKEN, "{\"by\":\"console-test\"}")
                        .status())
                .isEqualTo(200);
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            assertThat(stateButtons(browser, reminders)).containsExactly("Resume");
            assertThat(overviewCells(browser, reminders).get(STATE)).startsWith("paused by default (console-test)");
        });
        assertThat(relay.post("/actuator/relay/" + reminders + "/resume", TOKEN, null)
                        .status())
                .isEqualTo(200);
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            assertThat(stateButtons(browser, reminders)).isEmpty();
            assertThat(overviewCells(browser, reminders).get(STATE)).isEqualTo("paused by configuration");
        });
        screenshot(browser, "console.png");

        // Instances: each instance's seat in the division; one paused by its own configuration gave it up (why, in
        // the warning colour), the other business's seat pops every shard (one instance)
        browser.findElement(By.cssSelector("#tabs button[data-tab='instances']"))
                .click();
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            List<WebElement> paused = browser.findElements(
                    By.xpath("//table[@id='instances']/tbody/tr[td[1][text()='" + reminders + "']]/td[7]"));
            assertThat(paused).hasSize(1);
            assertThat(paused.get(0).getText())
                    .isEqualTo("given up: paused by this instance's own configuration "
                            + "(relay.businesses.<name>.paused)");
            assertThat(paused.get(0).getAttribute("class")).isEqualTo("warn");
            List<WebElement> relaying = browser.findElements(
                    By.xpath("//table[@id='instances']/tbody/tr[td[1][text()='" + orders + "']]/td[7]"));
            assertThat(relaying).hasSize(1);
            assertThat(relaying.get(0).getText()).isEqualTo("every shard");
        });
        screenshot(browser, "console-instances.png");
        browser.findElement(By.cssSelector("#tabs button[data-tab='overview']")).click();

        // purge all: the dialog names the count and wants the business name typed before it purges anything
        browser.findElement(By.cssSelector("#tabs button[data-tab='dead']")).click();
        new Select(browser.findElement(By.id("dead-business"))).selectByValue(orders);
        awaitRows(browser, "dead", 3);
        browser.findElement(By.id("dead-purge-all")).click();
        await().atMost(PAGE_WAIT).until(dialog::isDisplayed);
        assertThat(browser.findElement(By.id("confirm-question")).getText())
                .isEqualTo("Purge ALL 3 dead letters of " + orders
                        + " for good? Their payloads are deleted; this cannot be undone.");
        WebElement confirm = browser.findElement(By.id("confirm-ok"));
        assertThat(confirm.isEnabled()).as("not before the name is typed").isFalse();
        browser.findElement(By.id("confirm-typed")).sendKeys(orders.substring(0, orders.length() - 1));
        assertThat(confirm.isEnabled()).isFalse();
        screenshot(browser, "console-confirm-purge-all.png");
        browser.findElement(By.id("confirm-typed")).sendKeys(orders.substring(orders.length() - 1));
        assertThat(confirm.isEnabled()).isTrue();
        assertThat(kit.countAll(orders, "dead"))
                .as("nothing purged while asking")
                .isEqualTo(3);
        confirm.click();
        await().atMost(PAGE_WAIT).until(() -> kit.countAll(orders, "dead") == 0);
        await().atMost(PAGE_WAIT)
                .until(() -> browser.findElement(By.id("notice")).getText().contains("3 purged"));
        assertThat(output.getOut()).contains("business=" + orders + ": 3 dead letter(s) purged (all) by alice from");
    }

    /**
     * Submits the scheduled tab's search and waits until it lists exactly {@code n} entries. A search answers
     * "Partial" when it reaches one of its bounds (2 s of reading among them, which a CI fork beside four others may
     * take), and the page asks to search again: so does this, up to three times. Any other answer must list them.
     */
    private static void searchScheduled(WebDriver browser, int n) throws IOException {
        By partial = By.xpath("//table[@id='scheduled']/tbody/tr/td[starts-with(normalize-space(.), 'Partial')]");
        for (int attempt = 1; attempt <= 3; attempt++) {
            WebElement before = browser.findElement(By.cssSelector("#scheduled tbody tr"));
            browser.findElement(By.cssSelector("#scheduled-form button[type=submit]"))
                    .click();
            try {
                // the answer replaces the rows
                await().atMost(PAGE_WAIT).until(() -> stale(before));
            } catch (ConditionTimeoutException e) {
                break; // no answer: awaitRows says what the page shows
            }
            if (browser.findElements(partial).isEmpty()) {
                break;
            }
            System.out.printf("console search answered partial (attempt %d): searching again%n", attempt);
        }
        awaitRows(browser, "scheduled", n);
    }

    private static boolean stale(WebElement element) {
        try {
            element.isDisplayed();
            return false;
        } catch (StaleElementReferenceException e) {
            return true;
        }
    }

    /**
     * Waits until a table of the page lists exactly {@code n} entries (rows with a member). If it does not, the
     * failure names the rows shown, the table's text and the page's notice, with a screenshot
     * {@code awaited-<table>-<n>.png}.
     */
    private static void awaitRows(WebDriver browser, String table, int n) throws IOException {
        By rows = By.cssSelector("#" + table + " tbody tr[data-member]");
        try {
            await().atMost(PAGE_WAIT).until(() -> browser.findElements(rows).size() == n);
        } catch (ConditionTimeoutException e) {
            screenshot((TakesScreenshot) browser, "awaited-" + table + "-" + n + ".png");
            List<String> shown = browser.findElements(rows).stream()
                    .map(r -> r.getAttribute("data-member"))
                    .toList();
            throw new AssertionError(
                    "table " + table + ": " + n + " rows awaited, " + shown.size() + " shown " + shown
                            + "; the table: '"
                            + browser.findElement(By.cssSelector("#" + table + " tbody"))
                                    .getText()
                            + "'; notice: '"
                            + browser.findElement(By.id("notice")).getText() + "'",
                    e);
        }
    }

    /** The value of the overview tile with this label. */
    private static String tile(JavascriptExecutor browser, String label) {
        return (String) browser.executeScript(
                "return Array.from(document.querySelectorAll('#tiles .tile'))"
                        + ".filter(t => t.querySelector('.label').textContent.trim() === arguments[0])"
                        + ".map(t => t.querySelector('.value').textContent.trim())[0]",
                label);
    }

    /** Texts of the buttons in a business's overview row, read in one script. */
    @SuppressWarnings("unchecked")
    private static List<String> stateButtons(JavascriptExecutor browser, String business) {
        return (List<String>) browser.executeScript(
                "return Array.from(document.querySelectorAll("
                        + "'#overview tr[data-business=\"' + arguments[0] + '\"] td button'))"
                        + ".map(b => b.innerText.trim())",
                business);
    }

    /**
     * The overview row's cells as text, read in one script (the page re-renders the table every refresh, so element
     * references go stale between calls).
     */
    @SuppressWarnings("unchecked")
    private static List<String> overviewCells(JavascriptExecutor browser, String business) {
        return (List<String>) browser.executeScript(
                "return Array.from(document.querySelectorAll("
                        + "'#overview tr[data-business=\"' + arguments[0] + '\"] td')).map(td => td.innerText.trim())",
                business);
    }

    private static byte[] orderJson(int order, String action) {
        return ("{\"order\":" + order + ",\"action\":\"" + action + "\",\"customer\":\"c-" + (order * 37 % 1000)
                        + "\"}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /** A count as the page writes it (en-US grouping). */
    private static String figure(long n) {
        return String.format(Locale.US, "%,d", n);
    }

    private static void screenshot(TakesScreenshot browser, String name) throws IOException {
        Files.createDirectories(SCREENSHOTS);
        Path file = browser.getScreenshotAs(OutputType.FILE).toPath();
        Files.copy(file, SCREENSHOTS.resolve(name), StandardCopyOption.REPLACE_EXISTING);
    }
}
