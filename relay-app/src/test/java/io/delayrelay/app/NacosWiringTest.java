package io.delayrelay.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.stream.StreamSupport;

import com.alibaba.cloud.nacos.NacosConfigProperties;
import com.alibaba.nacos.api.NacosFactory;
import com.alibaba.nacos.api.config.ConfigService;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.PropertySource;

/**
 * The {@code nacos} profile: without a server (none runs here) the context still starts and binds Nacos's
 * settings; with NACOS_ADDR pointing at a real server, a change published there reaches the running relay.
 */
class NacosWiringTest {

    private final RelayTestKit kit = new RelayTestKit();

    @AfterEach
    void cleanUp() {
        kit.close();
    }

    @Test
    void nacosProfileStartsAndBindsTheNacosConfigSource() {
        String name = kit.business("nacos");
        Map<String, Object> props = RelayTestKit.business(kit.baseProperties(), name, kit.exchange("nacos"), "due");
        props.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
        props.put("spring.profiles.active", "nacos");
        props.put("NACOS_ADDR", "127.0.0.1:1");
        props.put("spring.cloud.nacos.config.timeout", "500");
        ConfigurableApplicationContext context = kit.startRelay(props);

        NacosConfigProperties nacos = context.getBean(NacosConfigProperties.class);
        assertThat(nacos.getServerAddr()).isEqualTo("127.0.0.1:1");
        assertThat(nacos.getFileExtension()).isEqualTo("yaml");
        assertThat(context.getEnvironment().getProperty("spring.config.import"))
                .startsWith("optional:nacos:");
        assertThat(context.getBean(RelayEngine.class).relays()).containsKey(name);
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "NACOS_ADDR", matches = ".+",
            disabledReason = "needs a Nacos server: set NACOS_ADDR=host:8848 (none is available in this workplace)")
    void aChangePublishedInNacosReachesTheRunningRelay() throws Exception {
        String addr = System.getenv("NACOS_ADDR");
        String name = kit.business("nacos-live");
        String exchange = kit.exchange("nacos-live");
        String dataId = "delay-relay-test-" + name + ".yaml";
        Properties nacosProps = new Properties();
        nacosProps.put("serverAddr", addr);
        ConfigService configService = NacosFactory.createConfigService(nacosProps);
        try {
            String yaml = "relay:\n  businesses:\n    " + name + ":\n      exchange: " + exchange
                    + "\n      routing-key: due\n      shards: %d\n";
            assertThat(configService.publishConfig(dataId, "DEFAULT_GROUP", yaml.formatted(4), "yaml")).isTrue();
            Map<String, Object> props = kit.baseProperties();
            props.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
            props.put("spring.profiles.active", "nacos");
            props.put("NACOS_ADDR", addr);
            props.put("NACOS_DATA_ID", dataId);
            ConfigurableApplicationContext context = kit.startRelay(props);
            RelayEngine engine = context.getBean(RelayEngine.class);
            assertThat(engine.relays().get(name).spec().shards()).isEqualTo(4);

            assertThat(configService.publishConfig(dataId, "DEFAULT_GROUP", yaml.formatted(8), "yaml")).isTrue();
            await().atMost(Duration.ofSeconds(30)).until(() -> engine.relays().get(name).spec().shards() == 8);
            assertThat(StreamSupport.stream(context.getEnvironment().getPropertySources().spliterator(), false)
                    .map(PropertySource::getName)).anyMatch(n -> n.contains(dataId));
        } finally {
            configService.removeConfig(dataId, "DEFAULT_GROUP");
            configService.shutDown();
        }
    }
}
