package io.delayrelay.app.ops;

import java.security.Principal;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

import static org.assertj.core.api.Assertions.assertThat;

/** The operator filter with a settable clock: who a token names, and how refused requests are logged. */
@ExtendWith(OutputCaptureExtension.class)
class RelayOpsTokenFilterTest {

    private final AtomicLong now = new AtomicLong(1_000_000);
    private final RelayOpsTokenFilter filter = new RelayOpsTokenFilter(tokens(), now::get);

    @Test
    void aRightTokenMakesTheRequestAnOperatorNamedByItsToken() throws Exception {
        MockHttpServletRequest request = request("POST", "/actuator/relay/orders/pause", "alice-0123456789ab");
        request.addHeader("X-Forwarded-For", "10.1.2.3, 10.0.0.1");
        Principal principal = filtered(request);
        assertThat(principal).isInstanceOf(RelayOpsTokenFilter.Operator.class);
        assertThat(principal.getName()).isEqualTo("alice");
        assertThat(principal).hasToString("alice from 10.1.2.3 via 127.0.0.1");
    }

    @Test
    void refusedRequestsAreLoggedAtMostOncePerIntervalAndCounted(CapturedOutput output) throws Exception {
        for (int i = 0; i < 5; i++) {
            assertThat(filtered(request("POST", "/actuator/relay/orders/purge", "guess-" + i)))
                    .isNull();
            now.addAndGet(1_000);
        }
        assertThat(filtered(request("GET", "/actuator/relay/orders/dead", null)))
                .isNull();
        assertThat(filtered(request("GET", "/actuator/relay", null)))
                .as("the overview is open")
                .isNull();
        assertThat(lines(output, "refused")).isEqualTo(1);
        now.addAndGet(RelayOpsTokenFilter.REFUSED_LOG_INTERVAL_MS);
        filtered(request("DELETE", "/actuator/relay/orders/dead", null));
        assertThat(lines(output, "refused")).isEqualTo(2);
        assertThat(output.getOut())
                .contains("relay ops: POST /actuator/relay/orders/purge refused, a wrong ops token from 127.0.0.1")
                .contains("relay ops: DELETE /actuator/relay/orders/dead refused, no ops token from 127.0.0.1 (5 more"
                        + " refused since the last line)")
                .doesNotContain("guess-");
    }

    private Principal filtered(MockHttpServletRequest request) throws Exception {
        AtomicReference<Principal> seen = new AtomicReference<>();
        filter.doFilter(
                request,
                new MockHttpServletResponse(),
                (req, res) -> seen.set(((HttpServletRequest) req).getUserPrincipal()));
        return seen.get();
    }

    private static MockHttpServletRequest request(String method, String uri, String token) {
        MockHttpServletRequest request = new MockHttpServletRequest(method, uri);
        request.setRemoteAddr("127.0.0.1");
        if (token != null) {
            request.addHeader(RelayOpsProperties.TOKEN_HEADER, token);
        }
        return request;
    }

    private static long lines(CapturedOutput output, String word) {
        return output.getOut()
                .lines()
                .filter(l -> l.contains("relay ops:") && l.contains(word))
                .count();
    }

    private static OperatorTokens tokens() {
        RelayOpsProperties p = new RelayOpsProperties();
        Map<String, String> named = new LinkedHashMap<>();
        named.put("alice", "alice-0123456789ab");
        p.setTokens(named);
        return OperatorTokens.of(p);
    }
}
