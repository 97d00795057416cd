package io.delayrelay.app.daemon;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;

import io.delayrelay.app.faults.RelayProcess;
import io.delayrelay.app.support.FreePort;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shipped exec jar (what the image and the Helm chart run) carries what the {@code nacos} profile needs, while
 * the plain jar's POM keeps the Nacos starter optional for library users; and the profile does not start silently
 * without its server.
 */
class ExecJarIT {

    private static List<String> entries(Path jar) throws IOException {
        try (JarFile file = new JarFile(jar.toFile())) {
            return Collections.list(file.entries()).stream()
                    .map(ZipEntry::getName)
                    .toList();
        }
    }

    @Test
    void execJarCarriesTheNacosConfigStarterItsClientAndTheProfile() throws IOException {
        List<String> entries = entries(RelayProcess.execJar());
        assertThat(entries)
                .anyMatch(e -> e.matches("BOOT-INF/lib/spring-cloud-starter-alibaba-nacos-config-.*\\.jar"))
                .anyMatch(e -> e.matches("BOOT-INF/lib/spring-alibaba-nacos-config-.*\\.jar"))
                .anyMatch(e -> e.matches("BOOT-INF/lib/nacos-client-[0-9].*\\.jar"))
                .anyMatch(e -> e.matches("BOOT-INF/lib/spring-cloud-context-.*\\.jar"))
                .contains("BOOT-INF/classes/delay-relay-nacos.yaml")
                .noneMatch(e -> e.contains("spring-boot-configuration-processor"));
    }

    @Test
    void libraryUsersDoNotInheritTheNacosStarter() throws IOException {
        Path plain;
        try (Stream<Path> files = Files.list(Path.of("target"))) {
            plain = files.filter(f -> f.getFileName().toString().matches("relay-app-[0-9][^-]*(-SNAPSHOT)?\\.jar"))
                    .findFirst()
                    .orElseThrow();
        }
        String pom;
        try (JarFile jar = new JarFile(plain.toFile())) {
            pom = new String(
                    jar.getInputStream(jar.getEntry("META-INF/maven/io.delayrelay/relay-app/pom.xml"))
                            .readAllBytes(),
                    StandardCharsets.UTF_8);
        }
        String nacos = pom.substring(pom.indexOf("<artifactId>spring-cloud-starter-alibaba-nacos-config</artifactId>"));
        assertThat(nacos.substring(0, nacos.indexOf("</dependency>"))).contains("<optional>true</optional>");
        assertThat(entries(plain)).noneMatch(e -> e.startsWith("BOOT-INF/"));
    }

    @Test
    void nacosProfileWithoutItsServerFailsWithOneLineNamingServerAndDataId() throws Exception {
        String dataId = "exec-jar-it-" + ProcessHandle.current().pid() + ".yaml";
        String nowhere = "127.0.0.1:" + FreePort.next();
        try (RelayProcess relay = RelayProcess.startJar(
                "nacos-no-server",
                Map.of("spring.profiles.active", "nacos", "NACOS_ADDR", nowhere, "NACOS_DATA_ID", dataId),
                false,
                RelayProcess.C1)) {
            Integer exit = relay.awaitExit(Duration.ofSeconds(150));
            String output = relay.output();
            assertThat(exit).as("exit code; output:\n%s", output).isNotNull().isNotZero();
            String line = "Nacos server " + nowhere + " (namespace public) is unreachable: cannot load data id '"
                    + dataId + "' (group DEFAULT_GROUP)";
            assertThat(output.lines().filter(l -> l.equals(line)).count())
                    .as(output)
                    .isEqualTo(1);
            assertThat(output).doesNotContain("delay-relay started");
        }
    }
}
