-- Replays dead letters: out of the dead set, reason forgotten, back into the shard due now (Redis time). An entry
-- already scheduled later is moved to now (ZADD LT); its payload, kept since it died, is published as usual.
-- Touches one Redis Cluster slot.
-- KEYS[1] K:i  KEYS[2] {K:i}:dead  KEYS[3] {K:i}:dead-reasons
-- ARGV[1] 'oldest' (the oldest ARGV[2] dead letters) or 'members' (ARGV[2..])
-- Returns the number replayed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local members
if ARGV[1] == 'oldest' then
  members = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)
else
  members = {}
  for i = 2, #ARGV do
    members[#members + 1] = ARGV[i]
  end
end
local replayed = 0
for _, m in ipairs(members) do
  if redis.call('ZREM', KEYS[2], m) == 1 then
    redis.call('HDEL', KEYS[3], m)
    redis.call('ZADD', KEYS[1], 'LT', string.format('%d', now), m)
    replayed = replayed + 1
  end
end
return replayed
