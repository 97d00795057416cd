package io.delayrelay.app.faults;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import io.delayrelay.api.DelayQueueKeys;
import io.delayrelay.app.engine.cold.ColdStore;
import io.delayrelay.app.support.PrivateRedis;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.ReturnType;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Where each member of a business's shards lives, for the cold tier's fault tests: hot ({@code K:i} or in flight) or
 * cold (a field of the member index), each shard read in one script call (so one shard is never seen half moved).
 * The script names the index parts from {@code {K:i}:cold-meta}'s prefix, as the relay's scripts do: the same slot,
 * so it runs on a Redis Cluster too (one call per shard, routed by its keys).
 */
final class ColdPlaces {

    /**
     * Hot members (scheduled or in flight) and live cold members (the member index) of the shards read; orphans are
     * members the index points at a block that is not stored (such an entry never comes back: lost).
     */
    record Where(Set<String> hot, Set<String> cold, int hotCount, int coldCount, Set<String> orphans) {

        /** Members both hot and cold. */
        Set<String> both() {
            Set<String> both = new HashSet<>(hot);
            both.retainAll(cold);
            return both;
        }

        /** Members hot or cold. */
        Set<String> all() {
            Set<String> all = new HashSet<>(hot);
            all.addAll(cold);
            return all;
        }

        /** Checks no member is hot and cold at once and none is indexed in a block not stored; {@code what}: the copy. */
        Where assertEachInOnePlace(String what) {
            assertThat(both()).as("%s: entries hot and cold at once", what).isEmpty();
            assertThat(orphans())
                    .as("%s: entries indexed in a block that is not stored", what)
                    .isEmpty();
            return this;
        }
    }

    private ColdPlaces() {}

    /** Live cold entries of a business's first {@code shards} shards ({@code cold-count.lua} per shard). */
    static long coldEntries(ColdStore cold, DelayQueueKeys keys, int shards) {
        long n = 0;
        for (int s = 0; s < shards; s++) {
            n += cold.count(keys, s).entries();
        }
        return n;
    }

    /**
     * Reads shards 0..shards-1 of a (re)started server once it answers: LOADING until it has replayed its AOF
     * ({@code atMost} for that); {@code name} names the server in a timeout.
     */
    static Where readOnceLoaded(String name, PrivateRedis redis, DelayQueueKeys keys, int shards, Duration atMost) {
        return await(name + " loaded")
                .ignoreExceptions()
                .pollInterval(Duration.ofMillis(20))
                .atMost(atMost)
                .until(
                        () -> {
                            try (RedisConnection c = redis.connection()) {
                                return read(c, keys, shards);
                            }
                        },
                        w -> true);
    }

    /**
     * Reads shards 0..shards-1 of the keys. {@code hotCount}/{@code coldCount} count members with repeats (a member
     * listed twice in the index parts, or both scheduled and in flight, counts twice), so a test can see a copy the
     * sets would hide.
     */
    @SuppressWarnings("unchecked")
    static Where read(RedisConnection c, DelayQueueKeys keys, int shards) {
        Set<String> hot = new HashSet<>();
        Set<String> cold = new HashSet<>();
        int hotCount = 0;
        int coldCount = 0;
        Set<String> orphans = new HashSet<>();
        for (int s = 0; s < shards; s++) {
            List<Object> reply = c.scriptingCommands()
                    .eval(
                            READ_SHARD,
                            ReturnType.MULTI,
                            4,
                            DelayQueueKeys.bytes(keys.shard(s)),
                            DelayQueueKeys.bytes(keys.inflight(s)),
                            DelayQueueKeys.bytes(keys.coldMeta(s)),
                            DelayQueueKeys.bytes(keys.coldBlocks(s)));
            for (int part = 0; part < 2; part++) {
                for (Object m : (List<Object>) reply.get(part)) {
                    hot.add(new String((byte[]) m, StandardCharsets.UTF_8));
                    hotCount++;
                }
            }
            for (Object m : (List<Object>) reply.get(2)) {
                cold.add(new String((byte[]) m, StandardCharsets.UTF_8));
                coldCount++;
            }
            for (Object m : (List<Object>) reply.get(3)) {
                orphans.add(new String((byte[]) m, StandardCharsets.UTF_8));
            }
        }
        return new Where(hot, cold, hotCount, coldCount, orphans);
    }

    /**
     * A shard's scheduled and in-flight members, its member index's fields and those of them whose block is not
     * stored, in one call (test-only script).
     */
    private static final byte[] READ_SHARD =
            """
            local hot = redis.call('ZRANGE', KEYS[1], 0, -1)
            local flight = redis.call('ZRANGE', KEYS[2], 0, -1)
            local cold, orphans = {}, {}
            local fan = tonumber(string.match(redis.call('HGET', KEYS[3], 'fan') or '0', '(%d+)$'))
            local prefix = string.sub(KEYS[3], 1, -10)
            for i = 0, fan - 1 do
              local fields = redis.call('HGETALL', prefix .. 'cold-ix:' .. i)
              for j = 1, #fields, 2 do
                cold[#cold + 1] = fields[j]
                if redis.call('HEXISTS', KEYS[4], string.match(fields[j + 1], '^(%d+)')) == 0 then
                  orphans[#orphans + 1] = fields[j]
                end
              end
            end
            return {hot, flight, cold, orphans}
            """
                    .getBytes(StandardCharsets.UTF_8);
}
