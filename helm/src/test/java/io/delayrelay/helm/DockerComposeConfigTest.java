package io.delayrelay.helm;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/** docker-compose.yml is valid: checked by docker-compose itself (no Docker engine needed for {@code config}). */
class DockerComposeConfigTest {

    static final String INSTALL_HINT = "docker-compose is not installed, so docker-compose.yml cannot be validated."
            + " Install it: apt-get update && apt-get install -y --no-install-recommends docker-compose"
            + " (Debian/Ubuntu), or pip install docker-compose";

    @Test
    void composeFileIsValid() throws Exception {
        Result result = compose("config", "-q");

        assertThat(result.exitCode())
                .as("docker-compose config -q:%n%s", result.output())
                .isZero();
    }

    @Test
    void composeFileDefinesTheRelayAndEveryServiceItNeeds() throws Exception {
        Result result = compose("config", "--services");

        assertThat(result.exitCode()).as(result.output()).isZero();
        assertThat(result.output().lines()).contains("redis", "rabbitmq", "nacos", "relay");
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyServiceRestartsAndRabbitmqKeepsTheHostnameItsVolumeIsNamedAfter() throws Exception {
        Result result = compose("config");
        assertThat(result.exitCode()).as(result.output()).isZero();

        Map<String, Map<String, Object>> services = (Map<String, Map<String, Object>>)
                new Yaml().<Map<String, Object>>load(result.output()).get("services");
        services.forEach((name, service) -> assertThat(service.get("restart"))
                .as("restart policy of %s", name)
                .isEqualTo(name.equals("nacos-config") ? "on-failure" : "unless-stopped"));
        // RabbitMQ stores its data under rabbit@<hostname>: a random hostname would orphan the volume's data
        assertThat(services.get("rabbitmq").get("hostname")).isEqualTo("rabbitmq");
    }

    /**
     * The demo runs with no Redis password, guest/guest, Nacos without authentication and a well-known operator token:
     * every published port is bound to the loopback interface, so the demo is reachable from this machine only.
     */
    @Test
    @SuppressWarnings("unchecked")
    void everyPublishedPortIsBoundToLoopbackOnly() throws Exception {
        Result result = compose("config");
        assertThat(result.exitCode()).as(result.output()).isZero();

        Map<String, Map<String, Object>> services = (Map<String, Map<String, Object>>)
                new Yaml().<Map<String, Object>>load(result.output()).get("services");
        int published = 0;
        for (Map.Entry<String, Map<String, Object>> service : services.entrySet()) {
            for (Object port : (List<Object>) service.getValue().getOrDefault("ports", List.of())) {
                published++;
                // docker-compose 1.x prints "127.0.0.1:6379:6379/tcp", Compose v2 the long form with host_ip
                String hostIp = port instanceof Map<?, ?> map
                        ? String.valueOf(map.get("host_ip"))
                        : port.toString().substring(0, port.toString().indexOf(':'));
                assertThat(hostIp).as("%s publishes %s", service.getKey(), port).isEqualTo("127.0.0.1");
            }
        }
        assertThat(published).as("ports published by the demo").isEqualTo(8);
    }

    private static Result compose(String... args) throws IOException, InterruptedException {
        Path binary = findOnPath("docker-compose");
        if (binary == null) {
            fail(INSTALL_HINT);
        }
        List<String> command = new ArrayList<>(List.of(binary.toString(), "-f", "docker-compose.yml"));
        command.addAll(List.of(args));
        Path output = Files.createTempFile("docker-compose", ".out");
        try {
            Process process = new ProcessBuilder(command)
                    .directory(Chart.REPOSITORY.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(output.toFile())
                    .start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail("docker-compose " + String.join(" ", args) + " did not finish within 120 s");
            }
            return new Result(process.exitValue(), Files.readString(output, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(output);
        }
    }

    private static Path findOnPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir, name);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    private record Result(int exitCode, String output) {}
}
