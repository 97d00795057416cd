package io.delayrelay.app.intake;

import java.util.HashMap;
import java.util.Map;

import com.rabbitmq.client.impl.LongStringHelper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class DelayHeadersTest {

    private static DelayHeaders.Due of(String name, Object value) {
        Map<String, Object> h = new HashMap<>();
        h.put(name, value);
        return DelayHeaders.of(h);
    }

    @Test
    void xDelayOfAnyAmqpIntegerTypeOrADigitStringIsMillisecondsAfterIntake() {
        assertThat(of("x-delay", 1500)).isEqualTo(new DelayHeaders.After(1500));
        assertThat(of("x-delay", 1500L)).isEqualTo(new DelayHeaders.After(1500));
        assertThat(of("x-delay", (short) 15)).isEqualTo(new DelayHeaders.After(15));
        assertThat(of("x-delay", (byte) 5)).isEqualTo(new DelayHeaders.After(5));
        assertThat(of("x-delay", "2500")).isEqualTo(new DelayHeaders.After(2500));
        assertThat(of("x-delay", LongStringHelper.asLongString(" 30000 "))).isEqualTo(new DelayHeaders.After(30000));
    }

    @Test
    void absentZeroOrNegativeMeansAtOnce() {
        assertThat(DelayHeaders.of(null)).isEqualTo(new DelayHeaders.After(0));
        assertThat(DelayHeaders.of(Map.of())).isEqualTo(new DelayHeaders.After(0));
        assertThat(of("x-delay", 0)).isEqualTo(new DelayHeaders.After(0));
        assertThat(of("x-delay", -400)).isEqualTo(new DelayHeaders.After(0));
        assertThat(of("x-delay", "-400")).isEqualTo(new DelayHeaders.After(0));
    }

    @Test
    void anAbsoluteDeliveryTimeIsTakenAndXDelayWinsOverIt() {
        assertThat(of("x-delivery-time", 1_800_000_000_000L)).isEqualTo(new DelayHeaders.At(1_800_000_000_000L));
        Map<String, Object> both = Map.of("x-delay", 10, "x-delivery-time", 1_800_000_000_000L);
        assertThat(DelayHeaders.of(both)).isEqualTo(new DelayHeaders.After(10));
    }

    @Test
    void anythingElseIsBadAndTheReasonNamesTheValueAndItsType() {
        assertThat(of("x-delay", "soon"))
                .isEqualTo(new DelayHeaders.Bad("x-delay 'soon' (string) is not an integer number of milliseconds"));
        assertThat(of("x-delay", 1.5))
                .isEqualTo(new DelayHeaders.Bad("x-delay '1.5' (Double) is not an integer number of milliseconds"));
        assertThat(of("x-delay", true))
                .isEqualTo(new DelayHeaders.Bad("x-delay 'true' (Boolean) is not an integer number of milliseconds"));
        assertThat(of("x-delay", "99999999999999999999")).isInstanceOf(DelayHeaders.Bad.class);
        assertThat(of("x-delivery-time", -5))
                .isEqualTo(new DelayHeaders.Bad("x-delivery-time '-5' (Integer) is not an epoch time in milliseconds"));
    }
}
