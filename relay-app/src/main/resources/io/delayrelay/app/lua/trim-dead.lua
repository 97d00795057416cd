-- Trims a shard's dead set (one Redis Cluster slot), with the letters' reasons. A dead letter's payload goes only
-- when its id is in none of K:i, inflight, dead (the payload invariant: a re-scheduled or in-flight copy still
-- needs it). Two modes:
--   ARGV[1] cutoff (time of death, epoch ms, inclusive), ARGV[2] most entries removed by this call: removes up to
--     ARGV[2] dead letters that died at or before the cutoff, oldest first (the max-age bound);
--   ARGV[1] 'members', ARGV[2..] ids: removes exactly those still dead (the max-size bound: a cutoff would take
--     every letter that shares the cutoff's time of death, and a batch dies in one millisecond).
-- The caller picks the cutoff or the ids from the business's bounds the same way on every replica, so two relay
-- instances trimming at once remove the same entries, not twice as many.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:dead-reasons
-- Returns how many dead letters were removed.
local members
if ARGV[1] == 'members' then
  members = {}
  for i = 2, #ARGV do
    if redis.call('ZSCORE', KEYS[4], ARGV[i]) then members[#members + 1] = ARGV[i] end
  end
else
  members = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
end
for _, m in ipairs(members) do
  redis.call('ZREM', KEYS[4], m)
  redis.call('HDEL', KEYS[5], m)
  if not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m) then
    redis.call('HDEL', KEYS[2], m)
  end
end
return #members
