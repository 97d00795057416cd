package io.delayrelay.helm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import com.marcnuri.helm.LintResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

class ChartLintTest {

    @TempDir
    Path work;

    @Test
    void defaultValuesPassStrictLint() {
        LintResult result = Chart.lintStrict(null, work);

        assertThat(result.isFailed())
                .as("helm lint --strict: %s", result.getMessages())
                .isFalse();
    }

    @Test
    void fullExampleValuesPassStrictLint() {
        LintResult result = Chart.lintStrict(Chart.FULL_VALUES, work);

        assertThat(result.isFailed())
                .as("helm lint --strict with ci/full-values.yaml: %s", result.getMessages())
                .isFalse();
    }

    @Test
    void strictLintRejectsABadBusinessNameAndExchangeType() throws IOException {
        Path bad = Files.writeString(
                work.resolve("bad-values.yaml"),
                """
                relay:
                  businesses:
                    Orders:
                      exchange: orders
                      routing-key: due
                      exchange-type: bogus
                """);

        LintResult result = Chart.lintStrict(bad, work);

        assertThat(result.isFailed()).isTrue();
        assertThat(String.join("\n", result.getMessages()))
                .contains("exchange-type")
                .contains("'Orders'");
    }
}
