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
