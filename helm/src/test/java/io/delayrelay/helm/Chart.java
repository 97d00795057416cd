package io.delayrelay.helm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import org.yaml.snakeyaml.Yaml;

/** The chart under test: lint and render it through helm-java (Helm's Go library, no helm binary needed). */
final class Chart {

    static final Path MODULE =
            Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize();
    static final Path DIR = MODULE.resolve("delay-relay");
    static final Path FULL_VALUES = DIR.resolve("ci/full-values.yaml");
    static final Path REPOSITORY = MODULE.getParent();
    static final String RELEASE = "relay";
    static final String NAMESPACE = "delayed";
    /** helm-java's built-in default (v1.20) is older than the chart's kubeVersion; render for a current cluster. */
    static final String KUBE_VERSION = "v1.30.0";

    private Chart() {}

    /** {@code helm lint --strict} with the chart's values.yaml, overlaid by {@code valuesFile} when not null. */
    static LintResult lintStrict(Path valuesFile, Path workDir) {
        Path chart = valuesFile == null ? DIR : copyWithValues(valuesFile, workDir);
        return new Helm(chart).lint().strict().call();
    }

    /** {@code helm template}; {@code valuesFile} may be null for the defaults. */
    static Manifests template(Path valuesFile) {
        var command = new Helm(DIR)
                .template()
                .withName(RELEASE)
                .withNamespace(NAMESPACE)
                .withKubeVersion(KUBE_VERSION);
        if (valuesFile != null) {
            command = command.withValuesFile(valuesFile);
        }
        return Manifests.parse(command.call());
    }

    /** {@code helm template} with {@code --set} pairs (name, value, name, value, ...); fails as Helm does. */
    static Manifests templateWith(String... pairs) {
        var command = new Helm(DIR)
                .template()
                .withName(RELEASE)
                .withNamespace(NAMESPACE)
                .withKubeVersion(KUBE_VERSION);
        for (int i = 0; i < pairs.length; i += 2) {
            command = command.set(pairs[i], pairs[i + 1]);
        }
        return Manifests.parse(command.call());
    }

    /**
     * The rendered NOTES.txt, as {@code helm install} prints it: a client-only dry-run install (no cluster), whose
     * output is the release notes.
     */
    static String notes(Path valuesFile) {
        var command = new Helm(DIR)
                .install()
                .withName(RELEASE)
                .withNamespace(NAMESPACE)
                .withKubeVersion(KUBE_VERSION)
                .dryRun()
                .clientOnly();
        if (valuesFile != null) {
            command = command.withValuesFile(valuesFile);
        }
        return command.call().getOutput();
    }

    /**
     * helm-java's lint takes no values file, so the overlay is merged into a copy of the chart's values.yaml the way
     * Helm merges values (maps deeply, everything else replaced).
     */
    private static Path copyWithValues(Path valuesFile, Path workDir) {
        try {
            Path copy = workDir.resolve("delay-relay");
            try (Stream<Path> files = Files.walk(DIR)) {
                for (Path source : (Iterable<Path>) files::iterator) {
                    Path target = copy.resolve(DIR.relativize(source).toString());
                    if (Files.isDirectory(source)) {
                        Files.createDirectories(target);
                    } else {
                        Files.copy(source, target);
                    }
                }
            }
            Yaml yaml = new Yaml();
            Map<String, Object> values = yaml.load(Files.readString(DIR.resolve("values.yaml")));
            Map<String, Object> overlay = yaml.load(Files.readString(valuesFile));
            Files.writeString(copy.resolve("values.yaml"), yaml.dump(merge(values, overlay)));
            return copy;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> merge(Map<String, Object> base, Map<String, Object> overlay) {
        Map<String, Object> merged = new LinkedHashMap<>(base);
        overlay.forEach((key, value) -> {
            Object current = merged.get(key);
            if (current instanceof Map && value instanceof Map) {
                merged.put(key, merge((Map<String, Object>) current, (Map<String, Object>) value));
            } else {
                merged.put(key, value);
            }
        });
        return merged;
    }

    /** The rendered documents of one {@code helm template} run. */
    record Manifests(List<Map<String, Object>> documents) {

        @SuppressWarnings("unchecked")
        static Manifests parse(String rendered) {
            List<Map<String, Object>> documents = new ArrayList<>();
            for (Object document : new Yaml().loadAll(rendered)) {
                if (document != null) {
                    documents.add((Map<String, Object>) document);
                }
            }
            return new Manifests(List.copyOf(documents));
        }

        List<Map<String, Object>> ofKind(String kind) {
            return documents.stream().filter(d -> kind.equals(d.get("kind"))).toList();
        }

        Map<String, Object> one(String kind) {
            List<Map<String, Object>> found = ofKind(kind);
            if (found.size() != 1) {
                throw new AssertionError("expected one " + kind + ", rendered " + found.size());
            }
            return found.get(0);
        }

        Map<String, Object> container() {
            return Nodes.map(Nodes.list(Nodes.at(one("Deployment"), "spec", "template", "spec", "containers"))
                    .get(0));
        }

        /** The relay's application.yaml from the chart's own ConfigMap. */
        String applicationYaml() {
            return ofKind("ConfigMap").stream()
                    .filter(c -> Nodes.map(c.get("data")).containsKey("application.yaml"))
                    .map(c -> (String) Nodes.map(c.get("data")).get("application.yaml"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no ConfigMap with application.yaml"));
        }
    }

    /** Navigation in parsed YAML. */
    static final class Nodes {

        private Nodes() {}

        static Object at(Map<String, Object> node, String... path) {
            Object current = node;
            for (String key : path) {
                if (!(current instanceof Map<?, ?> map) || !map.containsKey(key)) {
                    throw new AssertionError("no " + String.join(".", path) + " (missing '" + key + "')");
                }
                current = map.get(key);
            }
            return current;
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> map(Object node) {
            return (Map<String, Object>) node;
        }

        @SuppressWarnings("unchecked")
        static List<Object> list(Object node) {
            return (List<Object>) node;
        }
    }
}
