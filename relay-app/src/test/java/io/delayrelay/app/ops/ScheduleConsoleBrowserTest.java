package io.delayrelay.app.ops;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.RelayTestKit.Received;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebElement;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The console's Schedules view in a real headless chromium against the real Redis and RabbitMQ: it lists a runtime
 * schedule and one declared in configuration with their next fire times; without a token it has no button; with
 * one, Pause asks first and then pauses the schedule fleet-wide (the audit line names the operator), Trigger now
 * publishes one extra message, Delete wants the schedule's name typed. Screenshots land in target/console.
 */
@ExtendWith(OutputCaptureExtension.class)
class ScheduleConsoleBrowserTest {

    private static final String TOKEN = "console-ops-token";
    private static final String ALICE = "alice-console-token-42";
    private static final Path SCREENSHOTS = Path.of("target", "console");
    private static final Duration PAGE_WAIT = Duration.ofSeconds(20);
    /** Columns of the schedules table. */
    private static final int STATE = 3, NEXT = 4, LAST = 5;

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
    void listsSchedulesAndPausesTriggersAndDeletesOneFromThePage(CapturedOutput output) throws Exception {
        String business = kit.business("reports");
        String exchange = kit.exchange("reports");
        BlockingQueue<Received> received = kit.consume(kit.queue(exchange, "report.due"));
        String nightly = business + "-nightly";
        Map<String, Object> properties = RelayTestKit.business(kit.baseProperties(), business, exchange, "report.due");
        properties.put("relay.schedules." + nightly + ".business", business);
        properties.put("relay.schedules." + nightly + ".cron", "0 30 2 * * *");
        properties.put("relay.schedules." + nightly + ".zone", "Asia/Shanghai");
        properties.put("relay.schedules." + nightly + ".payload", "{\"report\":\"daily\"}");
        properties.put("relay.ops.token", TOKEN);
        properties.put("relay.ops.tokens.alice", ALICE);
        relay = new WebRelay(properties);
        String heartbeat = business + "-heartbeat";
        assertThat(relay.post(
                                "/actuator/relay/schedules/" + heartbeat + "/create",
                                TOKEN,
                                "{\"business\":\"" + business + "\",\"every\":\"1s\",\"payload\":\"beat\"}")
                        .status())
                .isEqualTo(200);

        chromium = new HeadlessChromium(1440, 900);
        var browser = chromium.driver;
        browser.get("http://127.0.0.1:" + relay.managementPort + RelayConsoleServlet.PATH);
        browser.findElement(By.cssSelector("#tabs button[data-tab='schedules']"))
                .click();

        // both listed without a token (a view shows no payload), with their next 5 fire times; no button
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            List<String> cells = cells(browser, heartbeat);
            assertThat(cells).hasSize(9);
            assertThat(cells.get(0)).startsWith(heartbeat).contains("created at runtime");
            assertThat(cells.get(1)).isEqualTo(business);
            assertThat(cells.get(STATE)).isEqualTo("active");
            assertThat(cells.get(NEXT).lines().toList()).hasSize(6); // the first with "in 1.0 s" below it
            assertThat(cells.get(LAST)).contains("relayed");
            List<String> declared = cells(browser, nightly);
            assertThat(declared.get(0)).contains("relay.schedules");
            assertThat(declared.get(2)).contains("Asia/Shanghai");
            assertThat(declared.get(NEXT)).contains(":30:00");
        });
        assertThat(buttons(browser, heartbeat)).isEmpty();
        assertThat(browser.getPageSource()).doesNotContain("daily");

        // with alice's token: Pause asks first, then pauses it on every instance
        browser.findElement(By.id("token-input")).sendKeys(ALICE);
        browser.findElement(By.id("token-save")).click();
        await().atMost(PAGE_WAIT).untilAsserted(() -> assertThat(buttons(browser, heartbeat))
                .containsExactly("Pause", "Trigger now", "Delete"));
        assertThat(buttons(browser, nightly)).as("declared in configuration").containsExactly("Pause", "Trigger now");
        screenshot(browser, "console-schedules.png");
        click(browser, heartbeat, "Pause");
        WebElement dialog = browser.findElement(By.id("confirm"));
        await().atMost(PAGE_WAIT).until(dialog::isDisplayed);
        assertThat(browser.findElement(By.id("confirm-question")).getText())
                .isEqualTo("Pause schedule " + heartbeat
                        + " on every relay instance? The slots that pass meanwhile are skipped.");
        browser.findElement(By.id("confirm-ok")).click();
        await().atMost(PAGE_WAIT).untilAsserted(() -> {
            assertThat(cells(browser, heartbeat).get(STATE)).isEqualTo("paused by alice from 127.0.0.1");
            assertThat(buttons(browser, heartbeat)).containsExactly("Resume", "Trigger now", "Delete");
        });
        assertThat(relay.get("/actuator/relay/schedules/" + heartbeat)
                        .json()
                        .get("state")
                        .asString())
                .isEqualTo("paused");
        assertThat(output.getOut()).contains("schedule " + heartbeat + ": paused by alice from 127.0.0.1");
        screenshot(browser, "console-schedules-paused.png");

        // Trigger now: one extra message with its own id, named in the notice
        received.clear();
        click(browser, heartbeat, "Trigger now");
        await().atMost(PAGE_WAIT).until(dialog::isDisplayed);
        browser.findElement(By.id("confirm-ok")).click();
        await().atMost(PAGE_WAIT).until(() -> {
            Received r = received.poll(100, TimeUnit.MILLISECONDS);
            return r != null && r.messageId().startsWith(heartbeat + "@manual-");
        });
        await().atMost(PAGE_WAIT)
                .until(() -> browser.findElement(By.id("notice")).getText().contains(heartbeat + "@manual-"));

        // Delete wants the name typed; then the row is gone
        click(browser, heartbeat, "Delete");
        await().atMost(PAGE_WAIT).until(dialog::isDisplayed);
        WebElement confirm = browser.findElement(By.id("confirm-ok"));
        assertThat(confirm.isEnabled()).as("not before the name is typed").isFalse();
        browser.findElement(By.id("confirm-typed")).sendKeys(heartbeat);
        assertThat(confirm.isEnabled()).isTrue();
        confirm.click();
        await().atMost(PAGE_WAIT).until(() -> cells(browser, heartbeat).isEmpty());
        assertThat(cells(browser, nightly)).isNotEmpty();
        assertThat(relay.get("/actuator/relay/schedules/" + heartbeat).status()).isEqualTo(404);
    }

    /**
     * Clicks a row's button; the page re-renders its table while it refreshes, so a button found just before may be
     * gone by the click (a stale element): then the fresh one is clicked.
     */
    private static void click(JavascriptExecutor browser, String schedule, String text) {
        await().atMost(PAGE_WAIT)
                .ignoreException(org.openqa.selenium.StaleElementReferenceException.class)
                .until(() -> {
                    button(browser, schedule, text).click();
                    return true;
                });
    }

    private static WebElement button(JavascriptExecutor browser, String schedule, String text) {
        return (WebElement) browser.executeScript(
                "return Array.from(document.querySelectorAll('#schedules tr[data-schedule=\"' + arguments[0]"
                        + " + '\"] td button')).find(b => b.innerText.trim() === arguments[1])",
                schedule,
                text);
    }

    @SuppressWarnings("unchecked")
    private static List<String> buttons(JavascriptExecutor browser, String schedule) {
        return (List<String>) browser.executeScript(
                "return Array.from(document.querySelectorAll('#schedules tr[data-schedule=\"' + arguments[0]"
                        + " + '\"] td button')).filter(b => b.offsetParent !== null).map(b => b.innerText.trim())",
                schedule);
    }

    /** A schedule's row as text, read in one script (the page re-renders the table every refresh). */
    @SuppressWarnings("unchecked")
    private static List<String> cells(JavascriptExecutor browser, String schedule) {
        return (List<String>) browser.executeScript(
                "return Array.from(document.querySelectorAll('#schedules tr[data-schedule=\"' + arguments[0]"
                        + " + '\"] td')).map(td => td.innerText.trim())",
                schedule);
    }

    private static void screenshot(TakesScreenshot browser, String name) throws IOException {
        Files.createDirectories(SCREENSHOTS);
        Path file = browser.getScreenshotAs(OutputType.FILE).toPath();
        Files.copy(file, SCREENSHOTS.resolve(name), StandardCopyOption.REPLACE_EXISTING);
    }
}
