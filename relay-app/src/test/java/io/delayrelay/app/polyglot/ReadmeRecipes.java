package io.delayrelay.app.polyglot;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The producer recipes of README.md as written: the code block after each {@code <!-- recipe: LANGUAGE ... -->}
 * marker, and the shard-rule test vectors of the table after {@code <!-- shard-vectors ... -->}.
 */
final class ReadmeRecipes {

    /** One row of the README's shard-rule table. */
    record Vector(String key, long crc32, int shardOf16, int shardOf7) {}

    private static final Pattern RECIPE =
            Pattern.compile("<!-- recipe: ([a-z]+)[^>]*-->\\s*\\n```[a-z]*\\n(.*?)\\n```", Pattern.DOTALL);
    private static final Pattern VECTOR_ROW =
            Pattern.compile("^\\| `([^`]+)` \\| `(\\d+)` \\| (\\d+) \\| (\\d+) \\|$", Pattern.MULTILINE);

    private final Path root;
    private final String readme;

    private ReadmeRecipes(Path root, String readme) {
        this.root = root;
        this.readme = readme;
    }

    /** Finds the repository root (README.md next to contract/) from the working directory upwards. */
    static ReadmeRecipes load() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null
                && !(Files.isRegularFile(dir.resolve("README.md")) && Files.isDirectory(dir.resolve("contract")))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no README.md next to a contract/ folder above "
                    + Path.of("").toAbsolutePath());
        }
        try {
            return new ReadmeRecipes(dir, Files.readString(dir.resolve("docs/redis-contract.md")));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    Path root() {
        return root;
    }

    /** Language -> code of every marked recipe block, in README order. */
    Map<String, String> recipes() {
        Map<String, String> blocks = new LinkedHashMap<>();
        Matcher m = RECIPE.matcher(readme);
        while (m.find()) {
            if (blocks.put(m.group(1), m.group(2) + "\n") != null) {
                throw new IllegalStateException("README.md marks two '" + m.group(1) + "' recipes");
            }
        }
        return blocks;
    }

    String recipe(String language) {
        String code = recipes().get(language);
        if (code == null) {
            throw new IllegalStateException("README.md has no code block marked <!-- recipe: " + language + " -->");
        }
        return code;
    }

    /** The rows of the first table after the shard-vectors marker. */
    List<Vector> vectors() {
        int marker = readme.indexOf("<!-- shard-vectors");
        if (marker < 0) {
            throw new IllegalStateException("README.md has no <!-- shard-vectors --> marker before the test vectors");
        }
        int end = readme.indexOf("\n\n", readme.indexOf("\n|", marker) + 1);
        Matcher m = VECTOR_ROW.matcher(readme.substring(marker, end < 0 ? readme.length() : end));
        List<Vector> rows = new ArrayList<>();
        while (m.find()) {
            rows.add(new Vector(
                    m.group(1),
                    Long.parseLong(m.group(2)),
                    Integer.parseInt(m.group(3)),
                    Integer.parseInt(m.group(4))));
        }
        return rows;
    }
}
