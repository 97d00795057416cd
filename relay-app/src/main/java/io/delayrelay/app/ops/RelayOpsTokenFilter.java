package io.delayrelay.app.ops;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.Principal;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Authenticates the relay operator: a request whose {@value RelayOpsProperties#TOKEN_HEADER} header (or
 * {@code Authorization: Bearer}) equals the configured token gets the {@value #ROLE} role. It never rejects a
 * request itself: the relay endpoint's write operations check the role, so other endpoints are unaffected.
 */
public class RelayOpsTokenFilter extends OncePerRequestFilter {

    /** Role a request with the right token has. */
    public static final String ROLE = "RELAY_OPS";

    /** Name of an operator's principal: this prefix and the request's origin. */
    public static final String OPERATOR_PREFIX = "operator from ";

    private final RelayOpsProperties properties;

    public RelayOpsTokenFilter(RelayOpsProperties properties) {
        this.properties = properties;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String presented = presentedToken(request);
        if (presented != null && properties.hasToken() && matches(presented, properties.getToken())) {
            chain.doFilter(new OperatorRequest(request), response);
        } else {
            chain.doFilter(request, response);
        }
    }

    private static String presentedToken(HttpServletRequest request) {
        String header = request.getHeader(RelayOpsProperties.TOKEN_HEADER);
        if (header != null) {
            return header.trim();
        }
        String authorization = request.getHeader("Authorization");
        if (authorization != null && authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return authorization.substring(7).trim();
        }
        return null;
    }

    private static boolean matches(String presented, String expected) {
        return MessageDigest.isEqual(
                presented.getBytes(StandardCharsets.UTF_8), expected.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Where a request came from, for the log line of each write: the client address, and the first address of
     * {@code X-Forwarded-For} when a proxy (e.g. kubectl port-forward, an ingress) passed one on.
     */
    static String origin(HttpServletRequest request) {
        String forwarded = request.getHeader("X-Forwarded-For");
        String first = forwarded == null ? null : forwarded.split(",", 2)[0].trim();
        return first == null || first.isEmpty() ? request.getRemoteAddr() : first + " via " + request.getRemoteAddr();
    }

    /** A request carrying the right token: its principal names the operator's origin, for the write logs. */
    private static final class OperatorRequest extends HttpServletRequestWrapper {
        private final Principal operator;

        OperatorRequest(HttpServletRequest request) {
            super(request);
            String from = origin(request);
            operator = () -> OPERATOR_PREFIX + from;
        }

        @Override
        public Principal getUserPrincipal() {
            return operator;
        }

        @Override
        public boolean isUserInRole(String role) {
            return ROLE.equals(role) || super.isUserInRole(role);
        }
    }
}
