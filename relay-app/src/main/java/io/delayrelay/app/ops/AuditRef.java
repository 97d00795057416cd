package io.delayrelay.app.ops;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * How log lines name a member without printing it: for producers that {@code ZADD} the message itself the member
 * <em>is</em> the body (e-mail addresses, card numbers), and logs travel further than Redis does. A reference is
 * {@code #} and the first 8 hex digits of the member's SHA-256; the console shows the same reference next to each
 * entry, so an audit line can be matched to a row without the log holding the body.
 */
final class AuditRef {

    /** Members named in one audit line; more are counted. */
    static final int LOGGED_MEMBERS = 5;

    private AuditRef() {}

    /** {@code #3f2a91c0}. */
    static String of(String member) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(member.getBytes(StandardCharsets.UTF_8));
            return "#" + HexFormat.of().formatHex(digest, 0, 4);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JVM", e);
        }
    }

    /** {@code #3f2a91c0 (12 B)}: the reference and the member's length in UTF-8 bytes. */
    static String describe(String member) {
        return of(member) + " (" + member.getBytes(StandardCharsets.UTF_8).length + " B)";
    }

    /** {@code members [#3f2a91c0 (12 B), ...]}, at most {@link #LOGGED_MEMBERS} of them, then a count. */
    static String members(List<String> members) {
        List<String> shown =
                members.stream().limit(LOGGED_MEMBERS).map(AuditRef::describe).toList();
        return members.size() <= LOGGED_MEMBERS ? "members " + shown : members.size() + " members, first " + shown;
    }
}
