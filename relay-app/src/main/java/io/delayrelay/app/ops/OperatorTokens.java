package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import io.delayrelay.app.trigger.ConfigProblem;
import io.delayrelay.app.trigger.RelayConfigurationException;
import org.jspecify.annotations.Nullable;

/**
 * The operators allowed to read bodies and write, each known by a name and a token, so that an audit line says
 * who acted (one shared token behind {@code kubectl port-forward} would log every action as 127.0.0.1).
 * {@code relay.ops.token} is the operator named {@value #DEFAULT}; {@code relay.ops.tokens.<name>} adds more.
 * Tokens are trimmed (a Secret made from a file ends with a newline) and must be at least {@value #MIN_LENGTH}
 * characters: a short one stops start-up with a message that names the property, never the value.
 */
public final class OperatorTokens {

    /** Name of the operator whose token is {@code relay.ops.token}. */
    public static final String DEFAULT = "default";

    /** Shortest token accepted. */
    public static final int MIN_LENGTH = 16;

    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,31}");

    private final Map<String, byte[]> tokens;

    private OperatorTokens(Map<String, byte[]> tokens) {
        this.tokens = tokens;
    }

    /** The operators of {@code relay.ops.*}; throws naming every bad property. */
    public static OperatorTokens of(RelayOpsProperties properties) {
        Map<String, byte[]> tokens = new LinkedHashMap<>();
        List<ConfigProblem> problems = new ArrayList<>();
        add(tokens, problems, "relay.ops.token", DEFAULT, properties.getToken());
        properties.getTokens().forEach((name, token) -> {
            String property = "relay.ops.tokens." + name;
            if (!NAME.matcher(name).matches()) {
                problems.add(ConfigProblem.global(
                        property, "an operator name is 1-32 characters of a-z, 0-9, '.', '_' or '-'"));
            } else if (tokens.containsKey(name)) {
                problems.add(ConfigProblem.global(
                        property, "operator '" + name + "' is already relay.ops.token's: name it otherwise"));
            } else {
                add(tokens, problems, property, name, token);
            }
        });
        List<String> names = List.copyOf(tokens.keySet());
        for (int i = 0; i < names.size(); i++) {
            for (int j = i + 1; j < names.size(); j++) {
                if (MessageDigest.isEqual(tokens.get(names.get(i)), tokens.get(names.get(j)))) {
                    problems.add(ConfigProblem.global(
                            property(names.get(j)),
                            "the same token as " + property(names.get(i))
                                    + ": each operator needs a token of their own, or the audit log cannot tell"
                                    + " them apart"));
                }
            }
        }
        if (!problems.isEmpty()) {
            throw new RelayConfigurationException(problems);
        }
        return new OperatorTokens(tokens);
    }

    private static void add(
            Map<String, byte[]> tokens, List<ConfigProblem> problems, String property, String name, String token) {
        String trimmed = token == null ? "" : token.strip();
        if (trimmed.isEmpty()) {
            return; // unset: that operator does not exist
        }
        if (trimmed.length() < MIN_LENGTH) {
            problems.add(ConfigProblem.global(
                    property,
                    "is " + trimmed.length() + " characters long; an operator token needs at least " + MIN_LENGTH
                            + " (e.g. openssl rand -hex 24)"));
            return;
        }
        tokens.put(name, trimmed.getBytes(StandardCharsets.UTF_8));
    }

    private static String property(String name) {
        return name.equals(DEFAULT) ? "relay.ops.token" : "relay.ops.tokens." + name;
    }

    /** Whether any operator exists: without one, listings and writes are disabled. */
    public boolean any() {
        return !tokens.isEmpty();
    }

    /** Operator names, in configuration order. */
    public List<String> names() {
        return List.copyOf(tokens.keySet());
    }

    /**
     * The operator whose token was presented, or null. Every token is compared, in constant time in its content,
     * whichever matches: the time taken does not tell how many operators there are or which one nearly matched.
     */
    public @Nullable String operator(String presented) {
        byte[] bytes = presented.strip().getBytes(StandardCharsets.UTF_8);
        String found = null;
        for (Map.Entry<String, byte[]> e : tokens.entrySet()) {
            if (MessageDigest.isEqual(bytes, e.getValue()) && found == null) {
                found = e.getKey();
            }
        }
        return found;
    }

    @Override
    public String toString() {
        return "OperatorTokens" + tokens.keySet();
    }
}
