package io.delayrelay.app.ops;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * What a write acts on, checked before anything is touched: named members, the oldest N, or everything. Nothing
 * is ever "everything" by default: an empty or misspelt selector used to purge every dead letter, so "all" must be
 * said ({@code "all": true}), and a request that names nothing, or names two kinds at once, is refused with what
 * to send instead.
 *
 * @param members the named members, without duplicates (empty unless named)
 * @param limit   the oldest N (null unless given)
 * @param all     everything
 */
record WriteSelection(List<String> members, @Nullable Integer limit, boolean all) {

    /** Most members one write may name. */
    static final int MAX_MEMBERS = 1_000;

    /** A write the endpoint refuses: the message names the bad field or value. */
    static final class Refused extends RuntimeException {
        Refused(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * A dead-letter selector (replay, purge): exactly one of member/members, limit, or all=true.
     *
     * @throws Refused naming what is wrong
     */
    static WriteSelection deadLetters(
            String action,
            @Nullable String member,
            @Nullable String members,
            @Nullable Integer limit,
            @Nullable Boolean all,
            int maxLimit) {
        List<String> named = named(member, members);
        if (named.isEmpty() && (member != null || members != null)) {
            throw new Refused(action + ": \"member\"/\"members\" name no member; nothing was " + past(action));
        }
        boolean everything = Boolean.TRUE.equals(all);
        int kinds = (named.isEmpty() ? 0 : 1) + (limit == null ? 0 : 1) + (everything ? 1 : 0);
        if (kinds == 0) {
            throw new Refused(action + " needs a selector: \"member\", \"members\" (one a line), \"limit\" (the"
                    + " oldest N) or \"all\": true; nothing was " + past(action));
        }
        if (kinds > 1) {
            throw new Refused(action + " takes one selector: \"member\"/\"members\", \"limit\" or \"all\": true, not"
                    + " several");
        }
        if (limit != null && (limit < 1 || limit > maxLimit)) {
            throw new Refused("limit must be between 1 and " + maxLimit + ", was " + limit);
        }
        return new WriteSelection(checked(named), limit, everything);
    }

    /**
     * A scheduled-entry selector (cancel, deliver-now): member or members only.
     *
     * @throws Refused naming what is wrong
     */
    static WriteSelection entries(
            String action,
            @Nullable String member,
            @Nullable String members,
            @Nullable Integer limit,
            @Nullable Boolean all) {
        if (limit != null || all != null) {
            throw new Refused(action + " acts on named entries only: send \"member\" or \"members\", not "
                    + (limit != null ? "\"limit\"" : "\"all\""));
        }
        List<String> named = named(member, members);
        if (named.isEmpty()) {
            throw new Refused(action + " needs \"member\" or \"members\" in the body");
        }
        return new WriteSelection(checked(named), null, false);
    }

    /** What the selection is, for an audit line; members are named by reference ({@link AuditRef}), never in full. */
    String describe() {
        if (all) {
            return "all";
        }
        return limit != null ? "oldest " + limit : AuditRef.members(members);
    }

    private static List<String> checked(List<String> named) {
        if (named.size() > MAX_MEMBERS) {
            throw new Refused("members names " + named.size() + " members; at most " + MAX_MEMBERS + " per request");
        }
        return named;
    }

    /**
     * The member and members of a write's body, without duplicates. {@code members} holds one member per line:
     * actuator reads a write's JSON body as text values, so a JSON array cannot be passed.
     */
    private static List<String> named(@Nullable String member, @Nullable String members) {
        Set<String> named = new LinkedHashSet<>();
        if (member != null && !member.isEmpty()) {
            named.add(member);
        }
        if (members != null) {
            members.lines().filter(m -> !m.isEmpty()).forEach(named::add);
        }
        return List.copyOf(named);
    }

    private static String past(String action) {
        return action.endsWith("e") ? action + "d" : action + "ed";
    }
}
