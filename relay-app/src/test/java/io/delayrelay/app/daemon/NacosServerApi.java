package io.delayrelay.app.daemon;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** Publishes and removes config on a real Nacos server through its open HTTP API, as an operator's tooling does. */
final class NacosServerApi {

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String addr;

    NacosServerApi(String addr) {
        this.addr = addr;
    }

    void publish(String dataId, String group, String yaml) throws IOException, InterruptedException {
        String form = "dataId=" + enc(dataId) + "&group=" + enc(group) + "&type=yaml&content=" + enc(yaml);
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(uri("/nacos/v1/cs/configs"))
                        .header("Content-Type", "application/x-www-form-urlencoded")
                        .POST(HttpRequest.BodyPublishers.ofString(form))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200 || !response.body().trim().equals("true")) {
            throw new IllegalStateException("publishing " + dataId + " to Nacos " + addr + " failed: "
                    + response.statusCode() + " " + response.body());
        }
    }

    void remove(String dataId, String group) throws IOException, InterruptedException {
        http.send(
                HttpRequest.newBuilder(uri("/nacos/v1/cs/configs?dataId=" + enc(dataId) + "&group=" + enc(group)))
                        .DELETE()
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private URI uri(String path) {
        return URI.create("http://" + addr + path);
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
