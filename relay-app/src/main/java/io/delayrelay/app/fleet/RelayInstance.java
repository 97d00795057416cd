package io.delayrelay.app.fleet;

/**
 * One relay instance as its heartbeat describes it.
 *
 * @param id        instance id ({@code relay.fleet.instance-id}, default host and process id)
 * @param host      host name
 * @param version   relay version
 * @param startedAt when the instance started, epoch ms
 * @param lastSeen  its latest heartbeat, epoch ms (Redis time)
 */
public record RelayInstance(String id, String host, String version, long startedAt, long lastSeen) {

    private static final char SEPARATOR = '\t';

    /** The heartbeat value stored in {@code K:instances} under the instance id: host, version, started, seen. */
    String encode() {
        return clean(host) + SEPARATOR + clean(version) + SEPARATOR + startedAt + SEPARATOR + lastSeen;
    }

    /** Parses a heartbeat value; null when it is not one (written by something else). */
    static RelayInstance decode(String id, String value) {
        String[] parts = value == null ? new String[0] : value.split(String.valueOf(SEPARATOR), -1);
        if (parts.length != 4 || !parts[2].matches("[0-9]{1,19}") || !parts[3].matches("[0-9]{1,19}")) {
            return null;
        }
        return new RelayInstance(id, parts[0], parts[1], Long.parseLong(parts[2]), Long.parseLong(parts[3]));
    }

    RelayInstance seenAt(long nowMs) {
        return new RelayInstance(id, host, version, startedAt, nowMs);
    }

    private static String clean(String text) {
        return text == null ? "" : text.replace(SEPARATOR, ' ');
    }
}
