package io.delayrelay.api;

/** Field names of the {@code K:meta} hash the relay maintains and producers read. */
public final class MetaFields {

    /** The current shard count M that producers must hash into. */
    public static final String SHARDS = "shards";

    /**
     * Comma-separated earlier shard counts whose extra shards (index &gt;= M) the relay still drains; empty when
     * none. Every relay instance scans up to the largest of them, so nothing scheduled under an earlier M is
     * orphaned while instances switch at slightly different moments.
     */
    public static final String DRAINING = "draining";

    /**
     * Comma-separated earlier shard counts, most recent first (at most 8). Cancel and reschedule also look in the
     * shard a key hashed to under each of them: an entry stays in the shard it was scheduled into.
     */
    public static final String HISTORY = "history";

    /**
     * The {@code relay.topology-version} of the configuration that wrote {@link #SHARDS}: a relay instance whose
     * configuration has a lower version (an old instance during a rolling update) never writes its shard count.
     * Producers do not need it.
     */
    public static final String TOPOLOGY_VERSION = "topology-version";

    private MetaFields() {
    }
}
