package io.delayrelay.app.config.nacos;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;

import static org.assertj.core.api.Assertions.assertThat;

/** A value in the Nacos data id beats local config files, and only them. */
class NacosPrecedenceTest {

    private static MapPropertySource source(String name, String shards) {
        return new MapPropertySource(
                name, Map.of("relay.businesses.orders.shards", shards, "relay.businesses.orders.threads", shards));
    }

    @Test
    void nacosValuesMoveAboveEveryConfigFileButStayBelowCommandLineAndEnvironment() {
        StandardEnvironment environment = new StandardEnvironment();
        MutablePropertySources sources = environment.getPropertySources();
        // in place before apply(): the command line must still win afterwards (threads), Nacos only beats files
        sources.addFirst(new MapPropertySource("commandLineArgs", Map.of("relay.businesses.orders.threads", "64")));
        sources.addLast(source(
                "Config resource 'file [/config/application.yaml]' via location 'optional:file:/config/'", "16"));
        sources.addLast(source("DEFAULT_GROUP@delay-relay.yaml", "32"));
        sources.addLast(source("Config resource 'class path resource [delay-relay-nacos.yaml]'", "8"));
        List<NacosImport> imports = List.of(new NacosImport("delay-relay.yaml", "DEFAULT_GROUP"));

        assertThat(environment.getProperty("relay.businesses.orders.shards"))
                .as("before")
                .isEqualTo("16");
        assertThat(NacosPrecedence.apply(environment, imports)).isEqualTo(1);

        assertThat(environment.getProperty("relay.businesses.orders.shards"))
                .as("Nacos beats the config files")
                .isEqualTo("32");
        assertThat(environment.getProperty("relay.businesses.orders.threads"))
                .as("the command line still beats Nacos")
                .isEqualTo("64");
        assertThat(sources.stream().map(PropertySource::getName).toList())
                .containsSubsequence(
                        "commandLineArgs",
                        "systemProperties",
                        "systemEnvironment",
                        "DEFAULT_GROUP@delay-relay.yaml",
                        "Config resource 'file [/config/application.yaml]' via location 'optional:file:/config/'");
        assertThat(NacosPrecedence.apply(environment, imports))
                .as("already in place")
                .isZero();
    }

    @Test
    void readsDataIdsAndGroupsFromTheImports() {
        StandardEnvironment environment = new StandardEnvironment();
        environment
                .getPropertySources()
                .addFirst(new MapPropertySource(
                        "test",
                        Map.of(
                                "spring.config.import",
                                "optional:file:/x.yaml, optional:nacos:delay-relay.yaml?group=RELAY&refreshEnabled=true,nacos:b.yaml",
                                "spring.cloud.nacos.config.server-addr",
                                "nacos:8848")));

        assertThat(NacosImport.of(environment))
                .containsExactly(
                        new NacosImport("delay-relay.yaml", "RELAY"), new NacosImport("b.yaml", "DEFAULT_GROUP"));
        assertThat(NacosImport.serverAddr(environment)).isEqualTo("nacos:8848");
        assertThat(NacosImport.namespace(environment)).isEqualTo("public");
        assertThat(NacosImport.active(environment)).isTrue();
    }
}
