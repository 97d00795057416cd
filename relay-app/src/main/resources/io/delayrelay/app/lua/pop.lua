-- Leases up to ARGV[1] due entries of one shard to the caller: due retries first, then due schedules. Touches one
-- Redis Cluster slot. Never parses the message. Time is Redis TIME, never the caller's clock.
-- KEYS[1] K:i (zset)  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:attempts (legacy, read once)
-- KEYS[5] {K:i}:retry  KEYS[6] {K:i}:leases
-- ARGV[1] batch size   ARGV[2] lease in ms   ARGV[3] lease token (unique per pop; ack and requeue must present it)
-- ARGV[4] ms after which a due schedule held back by its member's unsettled flight is looked at again
-- Returns {now, n, nextDue, member1, due1, payload1, failed1, member2, ...}
--   n = 0: nothing due; nextDue = the earliest score in K:i or retry, or -1 when both are empty (then now = 0:
--          an empty shard, the common idle case, costs two ZRANGEs and no TIME).
--   n > 0: nextDue = the earliest score left (-1 when empty); dueX is the entry's original due time (kept across
--          retries, so the AMQP message id is too), payloadX is nil when the member has no payload, failedX counts
--          earlier failed deliveries.
-- Ownership: a member has at most one flight (in {K:i}:inflight or {K:i}:retry, never both), described by
-- {K:i}:leases[member] = "<failed>:<original due>:<token>" (token empty while it waits in retry). A schedule in K:i
-- of a member whose flight is unsettled stays in K:i until that flight settles (acked or dead): the in-flight
-- delivery and the new schedule both happen, one after the other.
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local firstRetry = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
if not first[2] and not firstRetry[2] then
  return {0, 0, -1}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local earliest = math.huge
if first[2] then earliest = tonumber(first[2]) end
if firstRetry[2] then earliest = math.min(earliest, tonumber(firstRetry[2])) end
if earliest > now then
  return {now, 0, earliest}
end
local batch = tonumber(ARGV[1])
local token = ARGV[3]
-- taken[i] = {member, original due, failed, source}; every read happens before the first write, so a key of the
-- wrong type (written by another program) fails the script before anything moved.
local taken, seen = {}, {}
local retries = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'WITHSCORES', 'LIMIT', 0, batch)
if #retries > 0 then
  local names = {}
  for i = 1, #retries / 2 do names[i] = retries[2 * i - 1] end
  local records = redis.call('HMGET', KEYS[6], unpack(names))
  for i, m in ipairs(names) do
    local failed, origin = '0', retries[2 * i]
    local f, o = string.match(records[i] or '', '^(%d+):([^:]*):')
    if f then
      failed = f
      if o ~= '' then origin = o end
    end
    taken[#taken + 1] = {m, origin, failed, 'retry'}
    seen[m] = true
  end
end
local blocked = false
local offset, pages = 0, 0
while #taken < batch and pages < 4 do
  local want = batch - #taken
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', offset, want)
  local n = #due / 2
  if n == 0 then break end
  local names = {}
  for i = 1, n do names[i] = due[2 * i - 1] end
  local leased = redis.call('ZMSCORE', KEYS[3], unpack(names))
  local waiting = redis.call('ZMSCORE', KEYS[5], unpack(names))
  local legacy = redis.call('HMGET', KEYS[4], unpack(names))
  for i, m in ipairs(names) do
    if leased[i] or waiting[i] or seen[m] then
      blocked = true
    else
      -- a mark left in {K:i}:attempts by an earlier relay version keeps that retry's count and due time
      local failed, origin = '0', due[2 * i]
      local mark = legacy[i]
      if mark then
        local f, o = string.match(mark, '^(%d+):(.*)$')
        if f then
          failed = f
          if o ~= '' then origin = o end
        elseif string.match(mark, '^%d+$') then
          failed = mark
        end
      end
      taken[#taken + 1] = {m, origin, failed, 'shard'}
    end
  end
  if n < want then break end
  offset = offset + n
  pages = pages + 1
end
local out = {now, #taken, -1}
if #taken > 0 then
  local members = {}
  for i, e in ipairs(taken) do members[i] = e[1] end
  local payloads = redis.call('HMGET', KEYS[2], unpack(members))
  local deadline = string.format('%d', now + tonumber(ARGV[2]))
  local lease, records, fromShard, fromRetry = {}, {}, {}, {}
  for i, e in ipairs(taken) do
    lease[2 * i - 1] = deadline
    lease[2 * i] = e[1]
    records[2 * i - 1] = e[1]
    records[2 * i] = e[3] .. ':' .. e[2] .. ':' .. token
    if e[4] == 'shard' then fromShard[#fromShard + 1] = e[1] else fromRetry[#fromRetry + 1] = e[1] end
    local base = 3 + (i - 1) * 4
    out[base + 1] = e[1]
    out[base + 2] = e[2]
    out[base + 3] = payloads[i]
    out[base + 4] = e[3]
  end
  redis.call('ZADD', KEYS[3], unpack(lease))
  redis.call('HSET', KEYS[6], unpack(records))
  if #fromShard > 0 then
    redis.call('ZREM', KEYS[1], unpack(fromShard))
    redis.call('HDEL', KEYS[4], unpack(fromShard))
  end
  if #fromRetry > 0 then
    redis.call('ZREM', KEYS[5], unpack(fromRetry))
  end
end
-- What is due next. A due schedule held back by its member's flight is looked at again after ARGV[4] ms (its flight
-- usually settles within a confirm round trip), not at once: that would spin on it.
local next = math.huge
local rest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if rest[2] then
  next = tonumber(rest[2])
  if blocked and next <= now then next = now + tonumber(ARGV[4]) end
end
local restRetry = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
if restRetry[2] then next = math.min(next, tonumber(restRetry[2])) end
if next ~= math.huge then out[3] = next end
return out
