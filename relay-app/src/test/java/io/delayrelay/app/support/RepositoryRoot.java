package io.delayrelay.app.support;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The repository's root (the folder holding {@code contract/}, {@code docs/} and {@code README.md}), found from the
 * working directory upwards: Maven runs relay-app's tests in relay-app/, an IDE may run them from the root.
 */
public final class RepositoryRoot {

    private RepositoryRoot() {}

    public static Path path() {
        Path start = Path.of("").toAbsolutePath();
        Path dir = start;
        while (dir != null && !isRoot(dir)) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no contract/ and docs/ folders with a README.md above " + start);
        }
        return dir;
    }

    private static boolean isRoot(Path dir) {
        return Files.isDirectory(dir.resolve("contract"))
                && Files.isDirectory(dir.resolve("docs"))
                && Files.isRegularFile(dir.resolve("README.md"));
    }
}
