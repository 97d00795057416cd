-- Schedules (or reschedules) one entry in one shard. Touches one Redis Cluster slot.
-- KEYS[1] K:i (zset)   KEYS[2] {K:i}:payloads (hash)   KEYS[3] {K:i}:attempts (hash, relay-owned)
-- ARGV[1] member
-- ARGV[2] 'at' (ARGV[3] is the due epoch ms) or 'after' (ARGV[3] is a delay added to Redis TIME)
-- ARGV[3] milliseconds
-- ARGV[4] '1' = only if the member is already scheduled (reschedule), '0' = always
-- ARGV[5] '1' = ARGV[6] is the payload to store under the member (schedule by id), '0' = none
-- ARGV[6] payload
-- ARGV[7] wake channel (K:wake)
-- ARGV[8] shard index, sent on the wake channel as "<shard>:<due>"
-- Returns the due score, or -1 when ARGV[4] = '1' and the member was not scheduled.
local due
if ARGV[2] == 'after' then
  local t = redis.call('TIME')
  due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3])
else
  due = tonumber(ARGV[3])
end
if ARGV[4] == '1' and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return -1
end
local dueText = string.format('%d', due)
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[6])
end
redis.call('ZADD', KEYS[1], dueText, ARGV[1])
-- a new schedule starts afresh: no earlier failed attempts, its own due time (and so its own message id)
redis.call('HDEL', KEYS[3], ARGV[1])
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == ARGV[1] then
  redis.call('PUBLISH', ARGV[7], ARGV[8] .. ':' .. dueText)
end
return due
