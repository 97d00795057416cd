-- Acts on dead letters of one shard (one Redis Cluster slot): takes them out of the dead set, forgets the
-- reason, and then
--   'replay': schedules each back into the shard, due now (Redis time); an entry already scheduled later is
--             moved to now (ZADD LT); its payload, kept since it died, is published as usual;
--   'purge':  deletes its payload unless the member was scheduled again meanwhile (in K:i or in flight).
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:dead-reasons
-- ARGV[1] 'replay' or 'purge'
-- ARGV[2] 'oldest' (the oldest ARGV[3] dead letters) or 'members' (ARGV[3..])
-- Returns how many dead letters were acted on.
local members
if ARGV[2] == 'oldest' then
  members = redis.call('ZRANGE', KEYS[4], 0, tonumber(ARGV[3]) - 1)
else
  members = {}
  for i = 3, #ARGV do
    members[#members + 1] = ARGV[i]
  end
end
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local done = 0
for _, m in ipairs(members) do
  if redis.call('ZREM', KEYS[4], m) == 1 then
    redis.call('HDEL', KEYS[5], m)
    if ARGV[1] == 'replay' then
      redis.call('ZADD', KEYS[1], 'LT', now, m)
    elseif not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m) then
      redis.call('HDEL', KEYS[2], m)
    end
    done = done + 1
  end
end
return done
