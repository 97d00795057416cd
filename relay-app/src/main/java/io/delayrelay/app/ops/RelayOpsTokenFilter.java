package io.delayrelay.app.ops;

import java.io.IOException;
import java.security.Principal;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Authenticates a relay operator: a request whose {@value RelayOpsProperties#TOKEN_HEADER} header (or
 * {@code Authorization: Bearer}) holds one of the {@link OperatorTokens} gets the {@value #ROLE} role and an
 * {@link Operator} principal naming that operator and where the request came from. It never rejects a request
 * itself: the relay endpoint checks the role, so other endpoints are unaffected. A wrong token, or a request for the
 * relay endpoint's listings or writes without one, is logged at WARN with its origin, at most one line per
 * {@link #REFUSED_LOG_INTERVAL_MS} (the next line counts those in between), so a guessing run leaves a trace
 * without flooding the log.
 */
public class RelayOpsTokenFilter extends OncePerRequestFilter {

    /** Role a request with a right token has. */
    public static final String ROLE = "RELAY_OPS";

    /** Shortest gap between two log lines about refused requests. */
    static final long REFUSED_LOG_INTERVAL_MS = 10_000;

    private static final Logger log = LoggerFactory.getLogger(RelayOpsTokenFilter.class);

    /** An operator: the name of the token presented, and the request's origin (see {@link #origin}). */
    public record Operator(String name, String origin) implements Principal {
        @Override
        public String getName() {
            return name;
        }

        /** How an audit line names the operator: {@code alice from 10.1.2.3}. */
        @Override
        public String toString() {
            return name + " from " + origin;
        }
    }

    private final OperatorTokens tokens;
    private final LongSupplier clock;
    private final AtomicLong lastRefusedLog = new AtomicLong(Long.MIN_VALUE);
    private final AtomicLong refusedSince = new AtomicLong();

    public RelayOpsTokenFilter(OperatorTokens tokens) {
        this(tokens, System::currentTimeMillis);
    }

    RelayOpsTokenFilter(OperatorTokens tokens, LongSupplier clock) {
        this.tokens = tokens;
        this.clock = clock;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String presented = presentedToken(request);
        String name = presented == null || presented.isEmpty() ? null : tokens.operator(presented);
        if (name != null) {
            chain.doFilter(new OperatorRequest(request, new Operator(name, origin(request))), response);
            return;
        }
        if (presented != null) {
            refused(request, "a wrong ops token");
        } else if (tokens.any() && needsOperator(request)) {
            refused(request, "no ops token");
        }
        chain.doFilter(request, response);
    }

    /** Relay endpoint requests that show bodies or write: listings ({@code peek}, {@code dead}) and non-GETs. */
    private static boolean needsOperator(HttpServletRequest request) {
        String path = request.getRequestURI();
        int at = path.indexOf("/relay/");
        if (at < 0) {
            return false;
        }
        return !request.getMethod().equals("GET") || path.endsWith("/peek") || path.endsWith("/dead");
    }

    /** Logs a refused request, unless another was logged less than the interval ago (then it is counted). */
    void refused(HttpServletRequest request, String what) {
        long now = clock.getAsLong();
        long last = lastRefusedLog.get();
        if (last != Long.MIN_VALUE && now - last < REFUSED_LOG_INTERVAL_MS) {
            refusedSince.incrementAndGet();
            return;
        }
        if (!lastRefusedLog.compareAndSet(last, now)) {
            refusedSince.incrementAndGet();
            return;
        }
        long skipped = refusedSince.getAndSet(0);
        log.warn(
                "relay ops: {} {} refused, {} from {}{}",
                request.getMethod(),
                request.getRequestURI(),
                what,
                origin(request),
                skipped == 0 ? "" : " (" + skipped + " more refused since the last line)");
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

    /**
     * Where a request came from: the client address, and the first address of {@code X-Forwarded-For} when a proxy
     * (an ingress, a service mesh) passed one on. {@code kubectl port-forward} is a raw TCP tunnel and passes none:
     * behind it every origin is 127.0.0.1, which is why audit lines name the operator's token as well.
     */
    static String origin(HttpServletRequest request) {
        String forwarded = request.getHeader("X-Forwarded-For");
        String first = forwarded == null ? null : forwarded.split(",", 2)[0].trim();
        return first == null || first.isEmpty() ? request.getRemoteAddr() : first + " via " + request.getRemoteAddr();
    }

    /** A request carrying a right token: its principal is the operator. */
    private static final class OperatorRequest extends HttpServletRequestWrapper {
        private final Operator operator;

        OperatorRequest(HttpServletRequest request, Operator operator) {
            super(request);
            this.operator = operator;
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
