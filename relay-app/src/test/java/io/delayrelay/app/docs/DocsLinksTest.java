package io.delayrelay.app.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.delayrelay.app.support.RepositoryRoot;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The documents a newcomer follows from the README stay connected: every relative link in README.md, docs/ (with
 * its subfolders), CHANGELOG.md, CONTRIBUTING.md, contract/README.md, bench/results/README.md and the READMEs under
 * examples/ points at a file that exists, and every {@code #anchor} at a heading (or an explicit {@code id}) of its
 * target, named the way GitHub names heading anchors. Links inside code are not links; web addresses are not checked
 * (no network in the build). The README's story and package map name classes (and a test) and packages: each of
 * them exists, so a rename or a move updates the README too.
 */
class DocsLinksTest {

    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern EXPLICIT_ID = Pattern.compile("<a\\s+(?:id|name)=\"([^\"]+)\"");
    private static final Pattern INLINE_CODE = Pattern.compile("`[^`]*`");
    private static final Pattern MARKDOWN_LINK = Pattern.compile("\\[([^\\]]*)\\]\\([^)]*\\)");

    /** A code span naming a type: {@code ShardStore}, {@code PublishOutcome.Cause}, {@code engine.amqp.AmqpBatchPublisher}. */
    private static final Pattern TYPE_NAME = Pattern.compile("`((?:[a-z]+\\.)*)([A-Z][a-z]\\w*)((?:\\.[A-Z]\\w*)?)`");
    /** A row of the README's package table: {@code | `app.engine.amqp` | ...}. */
    private static final Pattern PACKAGE_ROW =
            Pattern.compile("^\\| `((?:app|api)(?:\\.[a-z]+)*)` \\|", Pattern.MULTILINE);
    /** Types the README names that are not this project's. */
    private static final Set<String> OTHER_PROJECTS = Set.of("RedisConnectionFactory");

    private final Path root = RepositoryRoot.path();
    private final Map<Path, Set<String>> anchors = new HashMap<>();

    @Test
    void everyRelativeLinkReachesAFileAndEveryAnchorAHeading() {
        List<String> problems = new ArrayList<>();
        int checked = 0;
        for (Path doc : documents()) {
            for (String target : links(doc)) {
                if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
                    continue; // https:, mailto:
                }
                checked++;
                int hash = target.indexOf('#');
                String path = hash < 0 ? target : target.substring(0, hash);
                String anchor = hash < 0 ? null : target.substring(hash + 1);
                Path file = path.isEmpty() ? doc : doc.getParent().resolve(path).normalize();
                String where = root.relativize(doc) + ": (" + target + ")";
                if (!file.startsWith(root)) {
                    problems.add(where + " leaves the repository");
                } else if (!Files.exists(file)) {
                    problems.add(where + " names no file: " + root.relativize(file));
                } else if (anchor != null && !anchorsOf(file).contains(anchor)) {
                    problems.add(
                            where + " names no heading of " + root.relativize(file) + "; it has " + anchorsOf(file));
                }
            }
        }
        assertThat(problems).isEmpty();
        assertThat(checked).as("relative links checked").isGreaterThan(30);
    }

    @Test
    void theReadmeLinksEveryDocumentAndTheExamples() {
        Set<String> linked = new LinkedHashSet<>();
        for (String target : links(root.resolve("README.md"))) {
            linked.add(target.replaceFirst("#.*", ""));
        }
        List<String> expected = new ArrayList<>(List.of("examples/producers/README.md"));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md"))
                    .map(p -> root.relativize(p).toString())
                    .forEach(expected::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertThat(expected).contains("docs/redis-contract.md", "docs/configuration.md", "docs/operations.md");
        assertThat(linked).containsAll(expected);
    }

    @Test
    void everyClassAndPackageTheReadmeNamesExists() throws IOException {
        Map<String, List<Path>> sources = new HashMap<>();
        for (String tree : List.of("relay-app/src/main", "relay-app/src/test", "relay-api/src/main")) {
            try (Stream<Path> files = Files.walk(root.resolve(tree + "/java"))) {
                files.filter(f -> f.toString().endsWith(".java")).forEach(f -> sources.computeIfAbsent(
                                f.getFileName().toString().replace(".java", ""), k -> new ArrayList<>())
                        .add(f));
            }
        }
        String readme = String.join("\n", prose(root.resolve("README.md")));
        List<String> problems = new ArrayList<>();
        int types = 0;
        Matcher m = TYPE_NAME.matcher(readme);
        while (m.find()) {
            String packages = m.group(1);
            String type = m.group(2);
            String nested = m.group(3);
            if (OTHER_PROJECTS.contains(type)) {
                continue;
            }
            types++;
            List<Path> files = sources.getOrDefault(type, List.of());
            String path = "/" + packages.replace('.', '/') + type + ".java";
            if (files.stream().noneMatch(f -> f.toString().endsWith(path))) {
                problems.add(m.group() + ": no " + path.substring(1) + " in relay-app or relay-api");
            } else if (!nested.isEmpty()
                    && files.stream().noneMatch(f -> read(f).matches("(?s).*\\b(enum|record|class|interface) "
                            + Pattern.quote(nested.substring(1)) + "\\b.*"))) {
                problems.add(m.group() + ": " + type + " declares no " + nested.substring(1));
            }
        }
        int packages = 0;
        Matcher row = PACKAGE_ROW.matcher(readme);
        while (row.find()) {
            packages++;
            String name = row.group(1);
            String module = name.startsWith("app") ? "relay-app" : "relay-api";
            Path dir = root.resolve(module + "/src/main/java/io/delayrelay/" + name.replace('.', '/'));
            if (!Files.isRegularFile(dir.resolve("package-info.java"))) {
                problems.add("package row " + name + ": no " + root.relativize(dir) + "/package-info.java");
            }
        }
        assertThat(problems).isEmpty();
        assertThat(types).as("types named").isGreaterThan(30);
        assertThat(packages).as("package rows").isGreaterThanOrEqualTo(10);
    }

    @Test
    void headingAnchorsAreNamedAsGitHubNamesThem() {
        assertThat(slug("Fault behaviour (`scripts/faults.sh`)")).isEqualTo("fault-behaviour-scriptsfaultssh");
        assertThat(slug("Redis: password, ACL user, TLS")).isEqualTo("redis-password-acl-user-tls");
        assertThat(slug("The `relay` endpoint")).isEqualTo("the-relay-endpoint");
        assertThat(slug("Producers in other languages: examples/producers/"))
                .isEqualTo("producers-in-other-languages-examplesproducers");
    }

    private List<Path> documents() {
        List<Path> docs = new ArrayList<>(List.of(
                root.resolve("README.md"),
                root.resolve("contract/README.md"),
                root.resolve("CHANGELOG.md"),
                root.resolve("CONTRIBUTING.md"),
                root.resolve("bench/results/README.md")));
        try (Stream<Path> md = Files.walk(root.resolve("docs"));
                Stream<Path> examples = Files.walk(root.resolve("examples"))) {
            md.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
            examples.filter(p -> p.getFileName().toString().startsWith("README"))
                    .filter(p -> !p.toString().contains("node_modules"))
                    .sorted()
                    .forEach(docs::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return docs;
    }

    /** Link targets outside code blocks and code spans, in document order. */
    private static List<String> links(Path doc) {
        List<String> targets = new ArrayList<>();
        for (String line : prose(doc)) {
            Matcher m = LINK.matcher(INLINE_CODE.matcher(line).replaceAll(""));
            while (m.find()) {
                targets.add(m.group(1));
            }
        }
        return targets;
    }

    private Set<String> anchorsOf(Path file) {
        return anchors.computeIfAbsent(file, f -> {
            Set<String> found = new LinkedHashSet<>();
            if (!f.toString().endsWith(".md")) {
                return found;
            }
            Map<String, Integer> seen = new HashMap<>();
            for (String line : prose(f)) {
                Matcher id = EXPLICIT_ID.matcher(line);
                while (id.find()) {
                    found.add(id.group(1));
                }
                Matcher h = HEADING.matcher(line);
                if (h.matches()) {
                    String slug = slug(h.group(1));
                    int n = seen.merge(slug, 1, Integer::sum);
                    found.add(n == 1 ? slug : slug + "-" + (n - 1));
                }
            }
            return found;
        });
    }

    /** GitHub's heading anchor: the text as shown, lower case, without punctuation, spaces as hyphens. */
    static String slug(String heading) {
        String text = MARKDOWN_LINK.matcher(heading).replaceAll("$1").replace("`", "");
        return text.toLowerCase(Locale.ROOT)
                .replaceAll("[^\\p{L}\\p{N} _-]", "")
                .replace(' ', '-');
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The lines of a Markdown file outside fenced code blocks. */
    private static List<String> prose(Path doc) {
        List<String> lines = new ArrayList<>();
        boolean fenced = false;
        try {
            for (String line : Files.readAllLines(doc)) {
                if (line.stripLeading().startsWith("```")) {
                    fenced = !fenced;
                } else if (!fenced) {
                    lines.add(line);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(doc + ": " + e.getMessage(), e);
        }
        return lines;
    }
}
