-- Pops up to ARGV[1] due entries of one shard into its in-flight set. Touches one Redis Cluster slot.
-- Never parses the message. Time is Redis TIME, never the caller's clock.
-- KEYS[1] K:i (zset)  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:attempts
-- ARGV[1] batch size   ARGV[2] lease in ms
-- Returns {now, n, nextDue, member1, due1, payload1, failed1, member2, ...}
--   n = 0: nothing due; nextDue = the earliest score in the shard, or -1 when the shard is empty (then now = 0:
--          an empty shard, the common idle case, costs one ZRANGE and no TIME).
--   n > 0: nextDue = the earliest score left in the shard (-1 when empty); dueX is the entry's original due time (kept across retries), payloadX is nil when the
--          member has no payload, failedX counts earlier failed deliveries.
-- Each popped member's {K:i}:attempts value becomes "<failed>:<original due>", so a retry or a redelivery after
-- a crash keeps the due time, and with it the AMQP message id, of the first attempt.
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if not first[2] then
  return {0, 0, -1}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local earliest = tonumber(first[2])
if earliest > now then
  return {now, 0, earliest}
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
local n = #due / 2
local members, lease = {}, {}
local deadline = string.format('%d', now + tonumber(ARGV[2]))
for i = 1, n do
  members[i] = due[2 * i - 1]
  lease[2 * i - 1] = deadline
  lease[2 * i] = members[i]
end
-- Reads first: a key of the wrong type (written by another program) fails the script before anything moved.
local payloads = redis.call('HMGET', KEYS[2], unpack(members))
local attempts = redis.call('HMGET', KEYS[4], unpack(members))
redis.call('ZADD', KEYS[3], unpack(lease))
redis.call('ZREM', KEYS[1], unpack(members))
local rest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local out = {now, n, -1}
if rest[2] then
  out[3] = tonumber(rest[2])
end
local marks = {}
for i = 1, n do
  local failed, origin = '0', due[2 * i]
  local mark = attempts[i]
  if mark then
    local f, o = string.match(mark, '^(%d+):(.*)$')
    if f then
      failed = f
      if o ~= '' then origin = o end
    elseif string.match(mark, '^%d+$') then
      failed = mark
    end
  end
  marks[2 * i - 1] = members[i]
  marks[2 * i] = failed .. ':' .. origin
  local base = 3 + (i - 1) * 4
  out[base + 1] = members[i]
  out[base + 2] = origin
  out[base + 3] = payloads[i]
  out[base + 4] = failed
end
redis.call('HSET', KEYS[4], unpack(marks))
return out
