package io.delayrelay.app.daemon;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.delayrelay.app.ops.RelayOpsProperties;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/** HTTP client of a relay process's management port: the {@code relay} endpoint, as an operator uses it. */
final class OpsClient {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final int port;
    private final String token;

    OpsClient(int port, String token) {
        this.port = port;
        this.token = token;
    }

    /** GET a path; the parsed JSON body, or null when the port does not answer (yet). */
    JsonNode get(String path) {
        return get(path, false);
    }

    /** GET a listing only an operator may read (with the token); null unless it answers 200. */
    JsonNode getAsOperator(String path) {
        return get(path, true);
    }

    private JsonNode get(String path, boolean operator) {
        try {
            HttpRequest.Builder request = HttpRequest.newBuilder(uri(path))
                    .timeout(Duration.ofSeconds(5))
                    .GET();
            if (operator) {
                request.header(RelayOpsProperties.TOKEN_HEADER, token);
            }
            HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
            return response.statusCode() == 200 ? JSON.readTree(response.body()) : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** GET a path as text (e.g. the Prometheus scrape); empty when the port does not answer. */
    String text(String path) {
        try {
            return http.send(
                            HttpRequest.newBuilder(uri(path))
                                    .timeout(Duration.ofSeconds(5))
                                    .GET()
                                    .build(),
                            HttpResponse.BodyHandlers.ofString())
                    .body();
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The shards this instance pops in a business's division, from its ops view; empty while it does not answer. */
    List<Integer> divisionShards(String business) {
        JsonNode view = get("/actuator/relay/" + business);
        List<Integer> shards = new ArrayList<>();
        JsonNode division = view == null ? null : view.get("division");
        if (division != null && division.get("shards") != null) {
            division.get("shards").forEach(shard -> shards.add(shard.asInt()));
        }
        return shards;
    }

    private static final Pattern SAMPLE = Pattern.compile("(?m)^(\\w+)\\{([^}]*)\\} (\\S+)$");

    /** The instance's one series of gauge {@code name} for the business, from its Prometheus scrape. */
    double gauge(String name, String business) {
        String scrape = text("/actuator/prometheus");
        Matcher m = SAMPLE.matcher(scrape);
        Double value = null;
        while (m.find()) {
            if (m.group(1).equals(name) && m.group(2).contains("business=\"" + business + "\"")) {
                assertThat(value).as("one %s series for %s", name, business).isNull();
                value = Double.valueOf(m.group(3));
            }
        }
        assertThat(value)
                .as("%s{business=%s} in the scrape:%n%s", name, business, scrape)
                .isNotNull();
        return value;
    }

    /** POST a write operation with the operator token; returns the JSON answer. */
    JsonNode post(String path, String jsonBody) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(uri(path))
                        .timeout(Duration.ofSeconds(10))
                        .header("Content-Type", "application/json")
                        .header(RelayOpsProperties.TOKEN_HEADER, token)
                        .POST(HttpRequest.BodyPublishers.ofString(jsonBody))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException(
                    "POST " + path + " answered " + response.statusCode() + ": " + response.body());
        }
        return JSON.readTree(response.body());
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }
}
