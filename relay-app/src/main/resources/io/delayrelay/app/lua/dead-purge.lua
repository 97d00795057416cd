-- Purges dead letters: out of the dead set, reason forgotten, payload deleted unless the member was scheduled
-- again meanwhile (in K:i or in flight). Touches one Redis Cluster slot.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:dead-reasons
-- ARGV[1] 'oldest' (the oldest ARGV[2] dead letters) or 'members' (ARGV[2..])
-- Returns the number purged.
local members
if ARGV[1] == 'oldest' then
  members = redis.call('ZRANGE', KEYS[4], 0, tonumber(ARGV[2]) - 1)
else
  members = {}
  for i = 2, #ARGV do
    members[#members + 1] = ARGV[i]
  end
end
local purged = 0
for _, m in ipairs(members) do
  if redis.call('ZREM', KEYS[4], m) == 1 then
    redis.call('HDEL', KEYS[5], m)
    if not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m) then
      redis.call('HDEL', KEYS[2], m)
    end
    purged = purged + 1
  end
end
return purged
