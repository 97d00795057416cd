-- Removes one scheduled entry from one shard. An entry already popped (in flight) is not touched.
-- KEYS[1] K:i (zset)   KEYS[2] {K:i}:payloads (hash)   KEYS[3] {K:i}:attempts (hash, relay-owned)
-- ARGV[1] member   ARGV[2] '1' = scheduled by id: drop its payload too
-- Returns 1 when removed, 0 when not scheduled.
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 then
  redis.call('HDEL', KEYS[3], ARGV[1])
  if ARGV[2] == '1' then
    redis.call('HDEL', KEYS[2], ARGV[1])
  end
end
return removed
