package io.delayrelay.app.ops;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import io.delayrelay.app.DelayRelayApplication;
import io.delayrelay.app.support.TestRelayApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A relay started as a servlet web app on random ports, and an HTTP client for its management port. */
final class WebRelay implements AutoCloseable {

    /** An HTTP answer: status, body text, the body parsed as JSON (null when it is not JSON) and the headers. */
    record Answer(int status, String text, JsonNode json, HttpHeaders headers) {
        /** A header's first value, or null. */
        String header(String name) {
            return headers.firstValue(name).orElse(null);
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    final ConfigurableApplicationContext context;
    final int managementPort;

    WebRelay(Map<String, Object> properties) {
        Map<String, Object> all = new LinkedHashMap<>(properties);
        all.put("spring.config.name", DelayRelayApplication.CONFIG_NAME);
        all.put("server.port", 0);
        all.put("management.server.port", 0);
        // delay-relay.yaml sets management.server.port=${MANAGEMENT_PORT:8081}, and a config file beats these
        // default properties: without this every test relay would bind 8081 (and collide with any other on it).
        all.put("MANAGEMENT_PORT", 0);
        context = new SpringApplicationBuilder(TestRelayApplication.class)
                .web(WebApplicationType.SERVLET)
                .properties(all)
                .run();
        managementPort = Integer.parseInt(context.getEnvironment().getProperty("local.management.port"));
    }

    Answer get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET(), null);
    }

    Answer get(String path, String token) {
        return send(HttpRequest.newBuilder(uri(path)).GET(), token);
    }

    Answer post(String path, String token, String jsonBody) {
        HttpRequest.BodyPublisher body =
                jsonBody == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(jsonBody);
        // actuator write operations take JSON; without a Content-Type header they answer 415
        return send(HttpRequest.newBuilder(uri(path)).POST(body).header("Content-Type", "application/json"), token);
    }

    Answer delete(String path, String token) {
        return send(HttpRequest.newBuilder(uri(path)).DELETE(), token);
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + managementPort + path);
    }

    private Answer send(HttpRequest.Builder request, String token) {
        if (token != null) {
            request.header(RelayOpsProperties.TOKEN_HEADER, token);
        }
        try {
            HttpResponse<String> response =
                    http.send(request.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            JsonNode json = null;
            try {
                json = response.body().isEmpty() ? null : JSON.readTree(response.body());
            } catch (RuntimeException notJson) {
                // prometheus text and the like
            }
            return new Answer(response.statusCode(), response.body(), json, response.headers());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        context.close();
    }
}
