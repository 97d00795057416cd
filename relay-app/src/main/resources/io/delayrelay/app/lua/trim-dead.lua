-- Trims a shard's dead set (one Redis Cluster slot): removes up to ARGV[2] dead letters that died at or before
-- ARGV[1] (epoch ms), oldest first, with their reasons. A dead letter's payload goes only when its id is in none
-- of K:i, inflight, dead (the payload invariant: a re-scheduled or in-flight copy still needs it).
-- The caller picks the cutoff from the business's bounds (max age, max size), so two relay instances trimming at
-- once remove the same entries, not twice as many.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:dead-reasons
-- ARGV[1] cutoff: time of death, epoch ms, inclusive   ARGV[2] most entries removed by this call
-- Returns how many dead letters were removed.
local members = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(members) do
  redis.call('ZREM', KEYS[4], m)
  redis.call('HDEL', KEYS[5], m)
  if not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m) then
    redis.call('HDEL', KEYS[2], m)
  end
end
return #members
