package io.delayrelay.app.ops;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;

import io.delayrelay.app.support.FreePort;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's chromium driven by Debian's chromedriver, headless, with a fresh profile. Fails with what to install
 * when either is missing (scripts/test.sh installs both); it never downloads a browser of its own.
 */
final class HeadlessChromium implements AutoCloseable {

    static final String INSTALL = "apt-get install -y --no-install-recommends chromium chromium-driver"
            + " (scripts/test.sh does this as root)";
    final ChromeDriver driver;
    private final ChromeDriverService service;
    private final Path profile;

    HeadlessChromium(int width, int height) {
        File browser = firstExisting("chromium", "/usr/bin/chromium", "/usr/lib/chromium/chromium");
        File chromedriver = firstExisting("chromium-driver", "/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver");
        try {
            profile = Files.createTempDirectory("relay-console-chromium");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        service = new ChromeDriverService.Builder()
                .usingDriverExecutable(chromedriver)
                .usingPort(FreePort.next())
                .withTimeout(Duration.ofSeconds(30))
                .build();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(browser);
        options.addArguments(
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                "--lang=en-US",
                "--user-data-dir=" + profile,
                "--window-size=" + width + "," + height);
        driver = new ChromeDriver(service, options);
        driver.manage().window().setSize(new Dimension(width, height));
    }

    private static File firstExisting(String what, String... paths) {
        for (String p : paths) {
            File f = new File(p);
            if (f.canExecute()) {
                return f;
            }
        }
        throw new IllegalStateException(what + " is not installed (looked at " + String.join(", ", paths)
                + "). The console's browser test needs Debian's chromium and chromium-driver: " + INSTALL);
    }

    @Override
    public void close() {
        try {
            driver.quit();
        } finally {
            service.stop();
            try (Stream<Path> files = Files.walk(profile)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // a temp dir left behind is harmless
            }
        }
    }
}
