package io.delayrelay.app.polyglot;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.delayrelay.app.support.TestServices;

/**
 * Runs one command of a producer example in examples/producers/ (one process per call, from the repository root,
 * against the test Redis), as a user runs the file. A missing tool fails with how to install it.
 */
final class RecipeRunner {

    private static final long TIMEOUT_SECONDS = 30;

    private final String language;
    private final Path root;
    private final List<String> command;

    private RecipeRunner(String language, Path root, List<String> command) {
        this.language = language;
        this.root = root;
        this.command = command;
    }

    /** A runner for the producer example in {@code language} (shell, python or node), run as a user runs it. */
    static RecipeRunner of(String language, ProducerExamples examples) {
        Path root = examples.root();
        Path file = examples.file(language);
        List<String> command =
                switch (language) {
                    case "shell" -> {
                        requireTool(
                                root,
                                "redis-cli, gzip and od",
                                "apt-get install redis-tools gzip coreutils",
                                "bash",
                                "-c",
                                "redis-cli --version && gzip --version && od --version");
                        yield List.of("bash", file.toString());
                    }
                    case "python" -> List.of(python(root), file.toString());
                    case "node" -> {
                        requireTool(root, "Node.js 18+", "apt-get install nodejs npm", "node", "--version");
                        Path modules = examples.directory().resolve("node_modules");
                        if (!Files.isDirectory(modules.resolve("ioredis"))
                                || !Files.isDirectory(modules.resolve("crc-32"))) {
                            throw new IllegalStateException("the Node example needs ioredis and crc-32: run "
                                    + "'(cd examples/producers && npm ci)' (scripts/test.sh does it)");
                        }
                        yield List.of("node", file.toString());
                    }
                    default -> throw new IllegalArgumentException("no runner for example language " + language);
                };
        return new RecipeRunner(language, root, command);
    }

    /** Runs an example command and returns its output without the trailing newline; fails on a non-zero exit. */
    String run(String... args) {
        List<String> full = new ArrayList<>(command);
        full.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(full).directory(root.toFile());
        builder.environment().put("REDIS_HOST", TestServices.redis().host());
        builder.environment()
                .put("REDIS_PORT", Integer.toString(TestServices.redis().port()));
        try {
            Process process = builder.redirectErrorStream(true).start();
            byte[] out = process.getInputStream().readAllBytes();
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException(
                        language + " example " + List.of(args) + " did not finish in " + TIMEOUT_SECONDS + " s");
            }
            String text = new String(out, StandardCharsets.UTF_8).stripTrailing();
            if (process.exitValue() != 0) {
                throw new IllegalStateException(
                        language + " example " + List.of(args) + " exited with " + process.exitValue() + ":\n" + text);
            }
            return text;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    String language() {
        return language;
    }

    @Override
    public String toString() {
        return language;
    }

    /** The first Python 3 that imports redis: POLYGLOT_PYTHON, python3 on the PATH, then Debian's /usr/bin/python3. */
    private static String python(Path root) {
        List<String> candidates = new ArrayList<>();
        String configured = System.getenv("POLYGLOT_PYTHON");
        if (configured != null && !configured.isBlank()) {
            candidates.add(configured);
        }
        candidates.addAll(List.of("python3", "/usr/bin/python3"));
        for (String candidate : candidates) {
            if (succeeds(root, candidate, "-c", "import redis")) {
                return candidate;
            }
        }
        throw new IllegalStateException(
                "the Python example needs Python 3 with the redis package; none of " + candidates
                        + " has it: apt-get install python3-redis (scripts/test.sh does it as root) or pip install redis, "
                        + "or point POLYGLOT_PYTHON at an interpreter that has it");
    }

    private static void requireTool(Path root, String what, String install, String... check) {
        if (!succeeds(root, check)) {
            throw new IllegalStateException("the example needs " + what + ": " + install);
        }
    }

    private static boolean succeeds(Path root, String... command) {
        try {
            Process process = new ProcessBuilder(command)
                    .directory(root.toFile())
                    .redirectErrorStream(true)
                    .start();
            process.getInputStream().readAllBytes();
            return process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS) && process.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
