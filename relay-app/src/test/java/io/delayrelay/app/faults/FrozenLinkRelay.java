package io.delayrelay.app.faults;

import java.io.IOException;
import java.util.Map;

import io.delayrelay.app.engine.PublishOutcome;
import io.delayrelay.app.metrics.RelayMeterNames;
import io.delayrelay.app.support.FreePort;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TcpProxy;
import io.delayrelay.app.support.TestServices;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * An in-process relay that reaches the broker through a {@link TcpProxy} the test freezes while batches go out: their
 * confirms cannot come within the 250 ms publish-timeout, so confirm timeouts (and the second copies their retries
 * may make) happen on any machine. A bare short timeout did not: a quiet broker confirmed whole batches within 2 ms.
 */
final class FrozenLinkRelay {

    final TcpProxy proxy;
    final MeterRegistry registry;
    private final String business;

    private FrozenLinkRelay(TcpProxy proxy, MeterRegistry registry, String business) {
        this.proxy = proxy;
        this.registry = registry;
        this.business = business;
    }

    /** Starts the relay of {@code business} (threads 2, batch-size 100, fast retries) behind a new proxy. */
    static FrozenLinkRelay start(RelayTestKit kit, String business, String exchange) throws IOException {
        TestServices.Endpoint rabbit = TestServices.rabbit();
        int port = FreePort.next();
        TcpProxy proxy = new TcpProxy(port, rabbit.host(), rabbit.port());
        Map<String, Object> properties = kit.baseProperties();
        properties.put("spring.rabbitmq.host", "127.0.0.1");
        properties.put("spring.rabbitmq.port", port);
        MeterRegistry registry = kit.startRelay(RelayTestKit.business(
                        properties,
                        business,
                        exchange,
                        "due",
                        "threads",
                        2,
                        "batch-size",
                        100,
                        "publish-timeout",
                        "250ms",
                        "retry-delay",
                        "50ms",
                        "retry-delay-max",
                        "200ms",
                        "max-attempts",
                        1000))
                .getBean(MeterRegistry.class);
        return new FrozenLinkRelay(proxy, registry, business);
    }

    /** Messages the relay counted as relayed. */
    double relayed() {
        Counter c = registry.find(RelayMeterNames.RELAYED)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .counter();
        return c == null ? 0.0 : c.count();
    }

    /** Publish failures the relay counted with this cause. */
    double failures(PublishOutcome.Cause cause) {
        return failures(registry, business, cause);
    }

    static double failures(MeterRegistry registry, String business, PublishOutcome.Cause cause) {
        Counter c = registry.find(RelayMeterNames.PUBLISH_FAILURES)
                .tag(RelayMeterNames.TAG_BUSINESS, business)
                .tag(RelayMeterNames.TAG_CAUSE, cause.tag())
                .counter();
        return c == null ? 0.0 : c.count();
    }
}
