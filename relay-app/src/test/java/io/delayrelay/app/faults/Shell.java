package io.delayrelay.app.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a local command (rabbitmqctl, redis-server, redis-cli) and fails loudly with its output. */
public final class Shell {

    private Shell() {}

    /** Runs the command; returns its output; throws when it fails or takes longer than {@code timeoutSeconds}. */
    public static String run(long timeoutSeconds, String... command) {
        try {
            Process p = new ProcessBuilder(List.of(command))
                    .redirectErrorStream(true)
                    .start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " timed out");
            }
            String text = new String(out, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " exited " + p.exitValue() + ":\n" + text);
            }
            return text;
        } catch (IOException e) {
            throw new IllegalStateException(
                    "cannot run " + String.join(" ", command)
                            + " (is it installed? these tests need the real local tools and never skip)",
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
