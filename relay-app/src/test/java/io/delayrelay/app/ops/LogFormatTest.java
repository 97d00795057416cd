package io.delayrelay.app.ops;

import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

import io.delayrelay.app.DelayRelayApplication;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The shipped delay-relay-logback.xml (tests otherwise use logback-test.xml): business and shard on every worker line. */
@ExtendWith(OutputCaptureExtension.class)
class LogFormatTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void consoleLinesCarryBusinessAndShard(CapturedOutput output) {
        String business = kit.business("logs");
        kit.startRelay(properties(business, false));
        kit.producer().scheduleAfter(business, "unroutable for the log", Duration.ZERO);

        await().atMost(Duration.ofSeconds(10)).until(() -> output.getOut().contains("dead-lettered"));
        String line = Arrays.stream(output.getOut().split("\n"))
                .filter(l -> l.contains("dead-lettered"))
                .findFirst()
                .orElseThrow();
        assertThat(line).contains(" ERROR ").containsPattern("\\[" + business + "/[0-9]+\\] : ");
    }

    @Test
    void jsonLogsProfileWritesOneJsonObjectPerLineWithBusinessAndShard(CapturedOutput output) {
        String business = kit.business("jsonlogs");
        kit.startRelay(properties(business, true));
        kit.producer().scheduleAfter(business, "unroutable for the json log", Duration.ZERO);

        await().atMost(Duration.ofSeconds(10)).until(() -> output.getOut().contains("dead-lettered"));
        String line = Arrays.stream(output.getOut().split("\n"))
                .filter(l -> l.contains("dead-lettered"))
                .findFirst()
                .orElseThrow();
        assertThat(line)
                .startsWith("{")
                .endsWith("}")
                .contains("\"business\":\"" + business + "\"")
                .containsPattern("\"shard\":\"[0-9]+\"")
                .contains("\"level\":\"ERROR\"");
    }

    private Map<String, Object> properties(String business, boolean json) {
        Map<String, Object> p = RelayTestKit.business(kit.baseProperties(), business, kit.exchange("logs"), "nobody");
        p.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
        if (json) {
            p.put("spring.profiles.active", "json-logs");
        }
        return p;
    }
}
