package io.delayrelay.app.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayrelay.app.support.RepositoryRoot;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The migration guide's publisher examples are the code the build runs: its Java block is the publisher of
 * {@code AmqpIntakeIT}, its Python block the publish call of {@code examples/intake/publish.py} (which that test runs).
 */
class AmqpIntakeGuideTest {

    private static final Path ROOT = RepositoryRoot.path();

    @Test
    void theGuidesJavaPublisherIsTheOneAmqpIntakeItRuns() throws IOException {
        String java = block("java", 0);
        assertThat(java).contains("setDelayLong");
        assertThat(squash(read("relay-app/src/test/java/io/delayrelay/app/daemon/AmqpIntakeIT.java")))
                .contains(squash(java));
    }

    @Test
    void theGuidesPythonPublisherIsTheExampleTheBuildRuns() throws IOException {
        String python = block("python", 0);
        assertThat(python).contains("\"x-delay\"");
        assertThat(squash(read("examples/intake/publish.py"))).contains(squash(python));
    }

    /** The n-th fenced block of a language in the migration section of docs/amqp-intake.md. */
    private static String block(String language, int n) throws IOException {
        String guide = read("docs/amqp-intake.md");
        String migration = guide.substring(guide.indexOf("## Migrating from the delayed-message plugin"));
        Matcher m = Pattern.compile("```" + language + "\\n(.*?)```", Pattern.DOTALL)
                .matcher(migration);
        List<String> blocks = new ArrayList<>();
        while (m.find()) {
            blocks.add(m.group(1));
        }
        assertThat(blocks).as("%s blocks in the migration guide", language).hasSizeGreaterThan(n);
        return blocks.get(n);
    }

    private static String squash(String code) {
        return code.replaceAll("\\s+", " ").strip();
    }

    private static String read(String path) throws IOException {
        return Files.readString(ROOT.resolve(path));
    }
}
