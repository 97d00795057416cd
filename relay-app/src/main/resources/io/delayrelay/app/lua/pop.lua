-- Pops up to ARGV[1] due entries of one shard into its in-flight set. Touches one Redis Cluster slot.
-- Never parses the message. Time is Redis TIME, never the caller's clock.
-- KEYS[1] K:i (zset)  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:attempts
-- ARGV[1] batch size   ARGV[2] lease in ms
-- Returns {now, n, nextDue, member1, due1, payload1, attempts1, member2, ...}
--   n = 0: nothing due; nextDue = the earliest score in the shard, or -1 when the shard is empty.
--   n > 0: nextDue = 0; payloadX / attemptsX are nil when absent.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
local n = #due / 2
if n == 0 then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if first[2] then
    return {now, 0, tonumber(first[2])}
  end
  return {now, 0, -1}
end
local members, lease = {}, {}
local deadline = string.format('%d', now + tonumber(ARGV[2]))
for i = 1, n do
  members[i] = due[2 * i - 1]
  lease[2 * i - 1] = deadline
  lease[2 * i] = members[i]
end
redis.call('ZADD', KEYS[3], unpack(lease))
redis.call('ZREM', KEYS[1], unpack(members))
local payloads = redis.call('HMGET', KEYS[2], unpack(members))
local attempts = redis.call('HMGET', KEYS[4], unpack(members))
local out = {now, n, 0}
for i = 1, n do
  local base = 3 + (i - 1) * 4
  out[base + 1] = members[i]
  out[base + 2] = due[2 * i]
  out[base + 3] = payloads[i]
  out[base + 4] = attempts[i]
end
return out
