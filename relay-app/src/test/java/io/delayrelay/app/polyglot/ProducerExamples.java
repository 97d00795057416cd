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

import io.delayrelay.app.support.RepositoryRoot;

/**
 * The producers in other languages as users get them: the files in examples/producers/ (one per language), and the
 * shard-rule test vectors of docs/redis-contract.md (the table after {@code <!-- shard-vectors ... -->}), which
 * every language must reproduce.
 */
final class ProducerExamples {

    /** One row of the contract's shard-rule table. */
    record Vector(String key, long crc32, int shardOf16, int shardOf7) {}

    /** A code block of docs/redis-contract.md marked {@code <!-- excerpt: PATH -->}: text shown from that file. */
    record Excerpt(Path file, String code) {}

    /** Language -> example file under examples/producers/. */
    static final Map<String, String> FILES =
            Map.of("shell", "delay.sh", "python", "delay.py", "node", "delay.js", "go", "delay.go");

    static final String CONTRACT_DOC = "docs/redis-contract.md";

    private static final Pattern EXCERPT =
            Pattern.compile("<!-- excerpt: ([^ ]+) -->\\s*\\n```[a-z]*\\n(.*?)\\n```", Pattern.DOTALL);
    private static final Pattern VECTOR_ROW =
            Pattern.compile("^\\| `([^`]+)` \\| `(\\d+)` \\| (\\d+) \\| (\\d+) \\|$", Pattern.MULTILINE);

    private final Path root;

    private ProducerExamples(Path root) {
        this.root = root;
    }

    /** Reads the examples under the repository root's examples/producers/. */
    static ProducerExamples load() {
        Path dir = RepositoryRoot.path();
        if (!Files.isDirectory(dir.resolve("examples/producers"))) {
            throw new IllegalStateException("no examples/producers/ in " + dir);
        }
        return new ProducerExamples(dir);
    }

    Path root() {
        return root;
    }

    Path directory() {
        return root.resolve("examples/producers");
    }

    /** The example file of {@code language}: shell, python, node or go. */
    Path file(String language) {
        String name = FILES.get(language);
        if (name == null) {
            throw new IllegalArgumentException("no producer example for language " + language);
        }
        return directory().resolve(name);
    }

    /** Language -> source of every example, in a stable order. */
    Map<String, String> sources() {
        Map<String, String> sources = new LinkedHashMap<>();
        for (String language : List.of("shell", "python", "node", "go")) {
            sources.put(language, read(file(language)));
        }
        return sources;
    }

    /** The rows of the first table after the shard-vectors marker of docs/redis-contract.md. */
    List<Vector> vectors() {
        String doc = read(root.resolve(CONTRACT_DOC));
        int marker = doc.indexOf("<!-- shard-vectors");
        if (marker < 0) {
            throw new IllegalStateException(
                    CONTRACT_DOC + " has no <!-- shard-vectors --> marker before the test vectors");
        }
        int end = doc.indexOf("\n\n", doc.indexOf("\n|", marker) + 1);
        Matcher m = VECTOR_ROW.matcher(doc.substring(marker, end < 0 ? doc.length() : end));
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

    /** Every marked excerpt of docs/redis-contract.md, its path resolved against docs/. */
    List<Excerpt> excerpts() {
        Path doc = root.resolve(CONTRACT_DOC);
        Matcher m = EXCERPT.matcher(read(doc));
        List<Excerpt> excerpts = new ArrayList<>();
        while (m.find()) {
            excerpts.add(new Excerpt(doc.getParent().resolve(m.group(1)).normalize(), m.group(2)));
        }
        return excerpts;
    }

    static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
