package io.delayrelay.app.ops;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.web.filter.OncePerRequestFilter;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Refuses relay endpoint writes that name a field the endpoint does not know. Actuator binds a write's JSON body to
 * the operation's parameters and drops every other key, so a misspelt selector ({@code {"id":"order-42"}},
 * {@code ?memberId=}) used to arrive as "no selector", which meant "every dead letter". Here such a request gets
 * 400 naming the field before the endpoint sees it. The body is read once, at most {@value #MAX_BODY_BYTES} bytes
 * (413 beyond), and handed on unchanged.
 */
public class RelayOpsRequestCheck extends OncePerRequestFilter {

    /** Fields a write's JSON body may hold. */
    static final Set<String> WRITE_FIELDS = Set.of("member", "members", "limit", "all", "by");

    /** Query parameters a {@code DELETE} may carry. */
    static final Set<String> DELETE_PARAMETERS = Set.of("member", "all");

    /** Largest write body read. */
    static final int MAX_BODY_BYTES = 4 * 1024 * 1024;

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        switch (request.getMethod()) {
            case "POST" -> checkBody(request, response, chain);
            case "DELETE" -> {
                List<String> unknown = new ArrayList<>(request.getParameterMap().keySet());
                unknown.removeAll(DELETE_PARAMETERS);
                if (unknown.isEmpty()) {
                    chain.doFilter(request, response);
                } else {
                    refuse(response, 400, "unknown parameter '" + unknown.get(0) + "': use member or all=true");
                }
            }
            default -> chain.doFilter(request, response);
        }
    }

    /**
     * The action of a schedule write ({@code .../relay/schedules/<name>/<action>}), or null for another request.
     */
    static String scheduleAction(HttpServletRequest request) {
        String path = request.getRequestURI();
        int at = path.indexOf("/relay/" + ScheduleOps.SECTION + "/");
        if (at < 0) {
            return null;
        }
        String[] rest = path.substring(at + ("/relay/" + ScheduleOps.SECTION + "/").length())
                .split("/", -1);
        return rest.length == 2 ? rest[1] : null;
    }

    private static void checkBody(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        byte[] body = request.getInputStream().readNBytes(MAX_BODY_BYTES + 1);
        if (body.length > MAX_BODY_BYTES) {
            refuse(response, 413, "a relay write body is at most " + MAX_BODY_BYTES + " bytes");
            return;
        }
        String schedule = scheduleAction(request);
        Set<String> fields = schedule == null
                ? WRITE_FIELDS
                : schedule.equals("create") ? Set.copyOf(ScheduleOps.CREATE_FIELDS) : Set.of();
        String takes = schedule == null
                ? "a relay write takes member, members, limit, all or by"
                : schedule.equals("create")
                        ? "a schedule's create takes " + String.join(", ", ScheduleOps.CREATE_FIELDS)
                        : "a schedule's " + schedule + " takes no field";
        for (String parameter : request.getParameterMap().keySet()) {
            if (!WRITE_FIELDS.contains(parameter) || schedule != null) {
                refuse(response, 400, "unknown parameter '" + parameter + "': " + takes);
                return;
            }
        }
        if (body.length > 0) {
            JsonNode json;
            try {
                json = JSON.readTree(body);
            } catch (JacksonException e) {
                refuse(response, 400, "a relay write body is a JSON object: " + e.getOriginalMessage());
                return;
            }
            if (json != null && !json.isMissingNode()) {
                if (!json.isObject()) {
                    refuse(response, 400, "a relay write body is a JSON object, was " + json.getNodeType());
                    return;
                }
                for (String field : json.propertyNames()) {
                    if (!fields.contains(field)) {
                        refuse(response, 400, "unknown field '" + field + "': " + takes);
                        return;
                    }
                }
                for (String field : json.propertyNames()) {
                    JsonNode value = json.get(field);
                    if (schedule != null && !field.equals("headers") && (value.isObject() || value.isArray())) {
                        refuse(response, 400, "\"" + field + "\" is a text, was " + value);
                        return;
                    }
                }
                JsonNode headers = json.get("headers");
                if (schedule != null && headers != null && headers.isObject()) {
                    // actuator binds a body's fields as text: the headers object goes on as its JSON text
                    ((tools.jackson.databind.node.ObjectNode) json).put("headers", JSON.writeValueAsString(headers));
                    body = JSON.writeValueAsBytes(json);
                }
                JsonNode all = json.get("all");
                if (all != null && !all.isBoolean()) {
                    refuse(response, 400, "\"all\" is true or false, was " + all);
                    return;
                }
            }
        }
        chain.doFilter(new ReadAgain(request, body), response);
    }

    private static void refuse(HttpServletResponse response, int status, String message) throws IOException {
        response.setStatus(status);
        response.setContentType("application/json");
        response.setCharacterEncoding("UTF-8");
        byte[] body = JSON.writeValueAsBytes(new OpsViews.Failure(status, message));
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    /** The request with its body, already read, served again. */
    private static final class ReadAgain extends HttpServletRequestWrapper {
        private final byte[] body;

        ReadAgain(HttpServletRequest request, byte[] body) {
            super(request);
            this.body = body;
        }

        @Override
        public ServletInputStream getInputStream() {
            InputStream in = new ByteArrayInputStream(body);
            return new ServletInputStream() {
                @Override
                public int read() throws IOException {
                    return in.read();
                }

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    return in.read(b, off, len);
                }

                @Override
                public boolean isFinished() {
                    try {
                        return in.available() == 0;
                    } catch (IOException e) {
                        return true;
                    }
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setReadListener(ReadListener listener) {
                    throw new UnsupportedOperationException("synchronous reads only");
                }
            };
        }

        @Override
        public BufferedReader getReader() {
            return new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), StandardCharsets.UTF_8));
        }

        @Override
        public int getContentLength() {
            return body.length;
        }

        @Override
        public long getContentLengthLong() {
            return body.length;
        }
    }
}
