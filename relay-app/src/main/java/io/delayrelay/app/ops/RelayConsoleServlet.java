package io.delayrelay.app.ops;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.core.io.ClassPathResource;
import org.springframework.web.util.HtmlUtils;

/**
 * Serves the operator console: three static files from the relay's own jar (no CDN: many production networks, like
 * the build machine, reach no internet). The page talks only to the {@code relay} actuator endpoint, whose base
 * path it gets written into the page.
 */
public class RelayConsoleServlet extends HttpServlet {

    /** Where the console is served, on the port actuator uses. */
    public static final String PATH = "/relay-console";

    private static final String RESOURCES = "io/delayrelay/app/console/";
    private static final String INDEX = "index.html";
    /** What the console may load and talk to: its own origin only. */
    private static final String CONTENT_SECURITY_POLICY =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                    + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    private static final Map<String, String> FILES = Map.of(
            INDEX,
            "text/html;charset=UTF-8",
            "console.css",
            "text/css;charset=UTF-8",
            "console.js",
            "text/javascript;charset=UTF-8");

    private final String actuatorBasePath;
    private final Map<String, byte[]> contents;

    public RelayConsoleServlet(String actuatorBasePath) {
        this.actuatorBasePath = actuatorBasePath;
        this.contents =
                Map.of(INDEX, read(INDEX), "console.css", read("console.css"), "console.js", read("console.js"));
    }

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String path = request.getPathInfo();
        if (path == null) {
            // relative links of the page need the trailing slash
            response.sendRedirect(request.getContextPath() + PATH + "/");
            return;
        }
        String file = path.equals("/") ? INDEX : path.substring(1);
        if (!FILES.containsKey(file)) {
            response.sendError(HttpServletResponse.SC_NOT_FOUND);
            return;
        }
        byte[] body = contents.get(file);
        if (file.equals(INDEX)) {
            String api = HtmlUtils.htmlEscape(request.getContextPath() + actuatorBasePath + "/relay");
            body = new String(body, StandardCharsets.UTF_8)
                    .replace("{{relayEndpoint}}", api)
                    .getBytes(StandardCharsets.UTF_8);
        }
        response.setContentType(FILES.get(file));
        response.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
        response.setHeader("X-Content-Type-Options", "nosniff");
        response.setHeader("Referrer-Policy", "no-referrer");
        response.setHeader("Cache-Control", "no-cache");
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    private static byte[] read(String file) {
        try (InputStream in = new ClassPathResource(RESOURCES + file).getInputStream()) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("console resource missing: " + RESOURCES + file, e);
        }
    }
}
