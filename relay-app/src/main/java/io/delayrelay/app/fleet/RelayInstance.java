package io.delayrelay.app.fleet;

/**
 * One relay instance as its heartbeat describes it.
 *
 * @param id        instance id ({@code relay.fleet.instance-id}, default host and process id)
 * @param host      host name
 * @param version   relay version
 * @param startedAt when the instance started, epoch ms
 * @param lastSeen  its latest heartbeat, epoch ms (Redis time)
 * @param seat      its place in the business's division of the shards as of that heartbeat: "seat 5, rank 1 of 3,
 *                  shards 1 4 7 10", or "given up: reason" while it cannot relay the business; "" when not known (a
 *                  heartbeat of an older relay, or the division off)
 */
public record RelayInstance(String id, String host, String version, long startedAt, long lastSeen, String seat) {

    public RelayInstance(String id, String host, String version, long startedAt, long lastSeen) {
        this(id, host, version, startedAt, lastSeen, "");
    }

    private static final char SEPARATOR = '\t';

    /** The heartbeat value stored in {@code K:instances} under the instance id: host, version, started, seen, seat. */
    String encode() {
        return clean(host)
                + SEPARATOR
                + clean(version)
                + SEPARATOR
                + startedAt
                + SEPARATOR
                + lastSeen
                + SEPARATOR
                + clean(seat);
    }

    /** Parses a heartbeat value; null when it is not one (written by something else). */
    static RelayInstance decode(String id, String value) {
        String[] parts = value == null ? new String[0] : value.split(String.valueOf(SEPARATOR), -1);
        if ((parts.length != 4 && parts.length != 5)
                || !parts[2].matches("[0-9]{1,19}")
                || !parts[3].matches("[0-9]{1,19}")) {
            return null;
        }
        return new RelayInstance(
                id,
                parts[0],
                parts[1],
                Long.parseLong(parts[2]),
                Long.parseLong(parts[3]),
                parts.length == 5 ? parts[4] : "");
    }

    RelayInstance seenAt(long nowMs) {
        return new RelayInstance(id, host, version, startedAt, nowMs, seat);
    }

    RelayInstance withSeat(String seat) {
        return new RelayInstance(id, host, version, startedAt, lastSeen, seat == null ? "" : seat);
    }

    private static String clean(String text) {
        return text == null ? "" : text.replace(SEPARATOR, ' ');
    }
}
