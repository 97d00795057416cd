package io.delayrelay.app;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.alibaba.cloud.nacos.NacosConfigManager;
import com.alibaba.cloud.nacos.NacosConfigProperties;
import io.delayrelay.app.config.nacos.ConfigCenterUnavailableException;
import io.delayrelay.app.engine.RelayEngine;
import io.delayrelay.app.support.RelayTestKit;
import io.delayrelay.app.support.TestRelayApplication;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The {@code nacos} profile without a reachable server, in-process: start-up fails with one line naming server and
 * data id, or with {@code relay.nacos.optional=true} starts on local configuration after a WARN naming them. The
 * same against a real server, with the exec jar as a process: {@code daemon.NacosReloadIT}.
 * (Both tests use the same unreachable address: the Nacos client is a JVM-wide singleton.)
 */
@ExtendWith(OutputCaptureExtension.class)
class NacosWiringTest {

    private static final String NO_SERVER = "127.0.0.1:1";

    private final RelayTestKit kit = new RelayTestKit();
    private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        contexts.forEach(ConfigurableApplicationContext::close);
        kit.close();
    }

    /**
     * The Nacos client is a JVM-wide singleton that outlives the contexts and would retry the dead address every
     * ~450 ms for the rest of the fork (review N16): shut it down. No other test of the fork uses Nacos in-process.
     */
    @AfterAll
    static void shutDownNacosClient() throws Exception {
        NacosConfigManager manager = NacosConfigManager.getInstance();
        if (manager != null) {
            manager.getConfigService().shutDown();
        }
    }

    private Map<String, Object> nacosProfile(String name, String dataId) {
        Map<String, Object> props = RelayTestKit.business(kit.baseProperties(), name, kit.exchange("nacos"), "due");
        props.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
        props.put("spring.profiles.active", "nacos");
        props.put("NACOS_DATA_ID", dataId);
        props.put("spring.cloud.nacos.config.timeout", "500");
        return props;
    }

    /** NACOS_ADDR as a command-line argument: it beats an NACOS_ADDR environment variable of the build. */
    private ConfigurableApplicationContext start(Map<String, Object> props) {
        ConfigurableApplicationContext context = new SpringApplicationBuilder(TestRelayApplication.class)
                .web(WebApplicationType.NONE)
                .properties(props)
                .run("--NACOS_ADDR=" + NO_SERVER);
        contexts.add(context);
        return context;
    }

    @Test
    void withOptionalTheRelayStartsOnLocalConfigurationAndWarnsNamingServerAndDataId(CapturedOutput output) {
        String name = kit.business("nacos");
        Map<String, Object> props = nacosProfile(name, "wiring-" + name + ".yaml");
        props.put("relay.nacos.optional", "true");
        ConfigurableApplicationContext context = start(props);

        NacosConfigProperties nacos = context.getBean(NacosConfigProperties.class);
        assertThat(nacos.getServerAddr()).isEqualTo(NO_SERVER);
        assertThat(nacos.getFileExtension()).isEqualTo("yaml");
        assertThat(context.getEnvironment().getProperty("spring.config.import")).startsWith("optional:nacos:");
        assertThat(context.getBean(RelayEngine.class).relays()).containsKey(name);
        assertThat(output.getOut()
                        .lines()
                        .filter(
                                l -> l.contains(" WARN ")
                                        && l.contains(
                                                "Nacos server " + NO_SERVER
                                                        + " (namespace public) is unreachable: cannot load data id 'wiring-"
                                                        + name
                                                        + ".yaml' (group DEFAULT_GROUP); relay.nacos.optional=true: starting on local configuration"))
                        .count())
                .isEqualTo(1);
    }

    @Test
    void withoutTheServerStartUpFailsWithOneLineNamingServerAndDataId() {
        String name = kit.business("nacos-strict");
        Map<String, Object> props = nacosProfile(name, "strict-" + name + ".yaml");

        assertThatThrownBy(() -> start(props))
                .isInstanceOf(ConfigCenterUnavailableException.class)
                .hasMessage(
                        "Nacos server " + NO_SERVER + " (namespace public) is unreachable: cannot load data id 'strict-"
                                + name + ".yaml' (group DEFAULT_GROUP)");
    }
}
