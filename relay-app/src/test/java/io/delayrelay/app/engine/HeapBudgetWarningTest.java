package io.delayrelay.app.engine;

import java.util.Map;

import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 24 (O6 of the operations review): each worker may hold 4 × batch-bytes in flight, and nothing said when the
 * businesses together could fill the heap. At start the relay now warns past half of the maximum heap, naming the
 * businesses and the arithmetic.
 */
@ExtendWith(OutputCaptureExtension.class)
class HeapBudgetWarningTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void warnsAtStartWhenTheWorkersMayHoldMoreThanHalfTheHeapNamingTheBusinesses(CapturedOutput output) {
        long maxHeapMb = Runtime.getRuntime().maxMemory() / (1024 * 1024);
        // 32 threads x 4 x 512 MB = 64 GB: more than half of any heap this test runs with
        String big = kit.business("bigbatch");
        String small = kit.business("smallbatch");
        Map<String, Object> props = RelayTestKit.business(
                kit.baseProperties(), big, kit.exchange("bigbatch"), "rk", "threads", 32, "batch-bytes", "512MB");
        RelayTestKit.business(props, small, kit.exchange("smallbatch"), "rk", "threads", 1, "batch-bytes", "1MB");

        kit.startRelay(props);

        assertThat(output.getOut())
                .contains("the workers may hold 65540 MB of messages in flight, more than half of the maximum heap ("
                        + maxHeapMb + " MB): " + big + " 32 threads x 4 x 512 MB = 65536 MB, " + small
                        + " 1 threads x 4 x 1 MB = 4 MB. Large payloads under load can exhaust the heap;"
                        + " lower relay.businesses.<name>.batch-bytes or threads, or give the JVM more memory");
    }

    @Test
    void staysQuietWithTheDefaults(CapturedOutput output) {
        String business = kit.business("defaultbatch");
        kit.startRelay(RelayTestKit.business(kit.baseProperties(), business, kit.exchange("defaultbatch"), "rk"));

        assertThat(output.getOut())
                .contains("business=" + business + " started")
                .doesNotContain("may hold");
    }
}
