package io.delayrelay.app.ops;

import java.util.LinkedHashMap;
import java.util.Map;

import io.delayrelay.app.trigger.RelayConfigurationException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OperatorTokensTest {

    @Test
    void theSingleTokenIsTheOperatorNamedDefaultAndIsTrimmed() {
        OperatorTokens tokens = OperatorTokens.of(properties("0123456789abcdef\n", Map.of()));
        assertThat(tokens.names()).containsExactly("default");
        assertThat(tokens.operator("0123456789abcdef")).isEqualTo("default");
        assertThat(tokens.operator(" 0123456789abcdef ")).isEqualTo("default");
        assertThat(tokens.operator("0123456789abcdeF")).isNull();
    }

    @Test
    void namedTokensNameTheirOperator() {
        OperatorTokens tokens =
                OperatorTokens.of(properties(null, Map.of("alice", "alice-0123456789ab", "bob", "bob-0123456789abcd")));
        assertThat(tokens.any()).isTrue();
        assertThat(tokens.operator("alice-0123456789ab")).isEqualTo("alice");
        assertThat(tokens.operator("bob-0123456789abcd")).isEqualTo("bob");
        assertThat(tokens.operator("carol-0123456789ab")).isNull();
    }

    @Test
    void noTokenMeansNoOperator() {
        OperatorTokens tokens = OperatorTokens.of(properties("  ", Map.of("blank", "")));
        assertThat(tokens.any()).isFalse();
    }

    @Test
    void everyBadTokenIsNamedByItsPropertyNeverByItsValue() {
        assertThatThrownBy(() -> OperatorTokens.of(properties(
                        "short-one",
                        Map.of(
                                "Alice!",
                                "alice-0123456789ab",
                                "bob",
                                "tiny",
                                "carol",
                                "same-0123456789abc",
                                "dave",
                                "same-0123456789abc"))))
                .isInstanceOf(RelayConfigurationException.class)
                .hasMessageContaining("relay.ops.token: is 9 characters long; an operator token needs at least 16")
                .hasMessageContaining("relay.ops.tokens.Alice!: an operator name is 1-32 characters")
                .hasMessageContaining("relay.ops.tokens.bob: is 4 characters long")
                .hasMessageContaining("the same token as relay.ops.tokens.")
                .satisfies(e -> assertThat(e.getMessage())
                        .doesNotContain("short-one")
                        .doesNotContain("tiny")
                        .doesNotContain("same-0123456789abc"));
    }

    private static RelayOpsProperties properties(String token, Map<String, String> tokens) {
        RelayOpsProperties p = new RelayOpsProperties();
        p.setToken(token);
        p.setTokens(new LinkedHashMap<>(tokens));
        return p;
    }
}
