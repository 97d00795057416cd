package io.delayrelay.api;

/** Field names of the {@code K:meta} hash the relay maintains and producers read. */
public final class MetaFields {

    /** The current shard count M that producers must hash into. */
    public static final String SHARDS = "shards";

    /**
     * Comma-separated earlier shard counts whose shards the relay still drains (empty when none). Cancel and
     * reschedule look there too.
     */
    public static final String DRAINING = "draining";

    private MetaFields() {
    }
}
