package io.delayrelay.api.autoconfigure;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import io.delayrelay.api.DelayQueueKeys;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** Producer settings, under {@code relay.producer}. */
@ConfigurationProperties("relay.producer")
public class DelayRelayProducerProperties {

    /** Default for {@link #defaultShards}. */
    public static final int DEFAULT_SHARDS = 16;
    /** Default for {@link #metaCacheTtl}. */
    public static final Duration DEFAULT_META_CACHE_TTL = Duration.ofSeconds(5);

    /** Whether to auto-configure a DelayedMessageProducer bean. */
    private boolean enabled = true;

    /**
     * Shard count used while the relay has not yet written K:meta; must match the relay's shards
     * for that business.
     */
    private int defaultShards = DEFAULT_SHARDS;

    /**
     * How long the shard count read from K:meta is cached. After the relay changes a business's shard
     * count, producers switch within this time.
     */
    private Duration metaCacheTtl = DEFAULT_META_CACHE_TTL;

    /** Source key per business, when not the default delayqueue:<business>. */
    private Map<String, String> sourceKeys = new LinkedHashMap<>();

    /** The keys of a business: its configured source key, else delayqueue:<business>. */
    public DelayQueueKeys keysFor(String business) {
        String sourceKey = sourceKeys.get(business);
        return sourceKey != null ? DelayQueueKeys.of(sourceKey) : DelayQueueKeys.forBusiness(business);
    }

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public int getDefaultShards() {
        return defaultShards;
    }

    public void setDefaultShards(int defaultShards) {
        this.defaultShards = defaultShards;
    }

    public Duration getMetaCacheTtl() {
        return metaCacheTtl;
    }

    public void setMetaCacheTtl(Duration metaCacheTtl) {
        this.metaCacheTtl = metaCacheTtl;
    }

    public Map<String, String> getSourceKeys() {
        return sourceKeys;
    }

    public void setSourceKeys(Map<String, String> sourceKeys) {
        this.sourceKeys = sourceKeys;
    }
}
