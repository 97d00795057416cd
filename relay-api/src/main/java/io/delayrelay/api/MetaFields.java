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

    /**
     * {@code "1"} while an operator has paused the business for the whole fleet (ops endpoint); absent otherwise.
     * The relay instance that writes it publishes {@link #CHANGED_NOTICE} on {@code K:wake}, and every instance
     * follows at once; a change made without the notice (e.g. by redis-cli) is followed within
     * {@code relay.fleet.pause-recheck-interval}. It survives restarts.
     */
    public static final String PAUSED = "paused";

    /** Who paused the business (free text the operator gave, or the instance that took the request). */
    public static final String PAUSED_BY = "paused-by";

    /** When the business was paused, epoch ms (Redis time). */
    public static final String PAUSED_AT = "paused-at";

    /**
     * The message on {@code K:wake} that tells every relay instance to read {@code K:meta} again now (instead of
     * a {@code "shard:due"} wake-up): the relay publishes it after it writes an operator's pause or resume; publish
     * it yourself after changing {@link #PAUSED} by hand.
     */
    public static final String CHANGED_NOTICE = "meta";

    private MetaFields() {}
}
