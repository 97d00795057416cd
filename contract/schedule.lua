-- delay-relay producer contract v2: schedule.lua (v1 calls, without ARGV[7..], do exactly what v1 did; cold tier aware)
-- Schedules one entry in one shard, by message or by id, and wakes the relay when it became the shard's
-- earliest entry. Scheduling a member that is already scheduled replaces its due time (and payload).
-- Any client may load it (SCRIPT LOAD, then EVALSHA); the Java producer (relay-api) runs this very file.
--
-- KEYS (all of shard i of source key K, so one Redis Cluster slot; always pass all five, in this order):
--   KEYS[1] K:i              zset  scheduled entries, score = due epoch ms
--   KEYS[2] {K:i}:payloads   hash  id -> message, for entries scheduled by id
--   KEYS[3] {K:i}:inflight   zset  relay-owned, read only here
--   KEYS[4] {K:i}:attempts   hash  relay-owned: failed attempts and original due time of a member
--   KEYS[5] {K:i}:dead       zset  relay-owned, read only here
-- ARGV:
--   ARGV[1] member: the message itself, or the id when ARGV[6] is given
--   ARGV[2] 'at' (ARGV[3] is the due time, epoch ms) or 'after' (ARGV[3] is a delay added to Redis TIME)
--   ARGV[3] milliseconds (integer)
--   ARGV[4] wake channel K:wake
--   ARGV[5] shard index i, sent on the wake channel as "<i>:<due>"
--   ARGV[6] optional: the message to store under the id ARGV[1] (schedule by id)
--   ARGV[7] optional (v2, needs ARGV[6]): the message's expiry: '' none, '<epoch ms>', or '+<ms>' after the due
--           time. Not before the due time. A delivery the relay would publish after it goes to the dead set with
--           reason expired instead (or is dropped: the business's on-late).
--   ARGV[8], ARGV[9], ... optional (v2, needs ARGV[6]): AMQP header name, value, name, value, ...: published
--           unchanged beside the relay's own. Names must be non-empty, distinct, and not start with x-delay- (any
--           case: the relay's headers); W3C traceparent / tracestate are headers like any other.
--   With options, the payload is stored as an envelope the relay reads (docs/redis-contract.md, "Per-message
--   options"): "\255DR2:<expiry>:<count>:" then "<bytes>:<name><bytes>:<value>" per header, then the message. A
--   message that itself starts with "\255DR2:" is stored in an envelope without options, so it is published as is.
-- Returns the due time, epoch ms.
-- A cold copy of the member (moved by the relay to a cold block, docs/cold-tier.md) is dropped from the cold member
-- index (or a drop request is written for it): the new schedule is the one live copy, with the new message.
--
-- A new schedule starts afresh: the member's attempts mark is removed, so the relay derives a new AMQP message
-- id from the new due time (a consumer deduplicating on it does not drop the new message). Except while the
-- member is in flight: then the mark belongs to that delivery (its retries keep their message id); the relay
-- does not pop the member again before that delivery settles and clears it, so both deliveries happen.
-- Payloads: one per id. A dead letter of the same id keeps pointing at it, so this never deletes a payload; it
-- replaces it with the new message.
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
-- model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
local member, mode, ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- Cold tier (docs/cold-tier.md): the relay may have moved a far-future entry out of K:i into a cold block of this
-- shard; it is then listed in the member index {K:i}:cold-ix:<n> (n from the member's SHA-1 and the fan-out in
-- {K:i}:cold-meta), keys built from KEYS[2]'s prefix, so the same slot. Without {K:i}:cold-meta nothing is cold.
-- The index field of a member is the member itself, or, when cold-meta's fan reads "2:<fan-out>" (index rule 2) and
-- the member is longer than 32 bytes (or starts with byte 0xFF), byte 0xFF and bytes 4-11 of its SHA-1 (a digest). A digest cannot tell which
-- member it stands for, so a change to such an entry is written as a request keyed by the whole member
-- ({K:i}:cold-drop: cancelled or scheduled again; {K:i}:cold-moved: rescheduled to a due time) that the relay applies
-- when it brings the block back, after checking the member against the block: nothing else is ever changed.
local function coldOf(m)
  local prefix = string.sub(KEYS[2], 1, -9)
  local recorded = redis.call('HMGET', prefix .. 'cold-meta', 'fan')[1]
  if not recorded then return nil end
  local rule, fan = string.match(recorded, '^(%d+):(%d+)$')
  local h = redis.sha1hex(m)
  local part = tonumber(string.sub(h, 1, 6), 16) % tonumber(fan or recorded)
  local c = {prefix = prefix, field = m, ix = prefix .. 'cold-ix:' .. part}
  if rule == '2' and (#m > 32 or string.byte(m, 1) == 255) then
    local b = {}
    for k = 7, 21, 2 do b[#b + 1] = tonumber(string.sub(h, k, k + 1), 16) end
    c.field, c.digest = '\255' .. string.char(unpack(b)), true
  end
  return c
end
-- The block a cold entry of member m lives in per the index, or nil (reads only: the index part, and for a digest
-- field the two request hashes, so that in a Redis Cluster slot in migration the script fails before any write).
local function coldBlockOf(c, m)
  local at = redis.call('HMGET', c.ix, c.field)[1]
  if c.digest then
    local dropped = redis.call('HMGET', c.prefix .. 'cold-drop', m)[1]
    local moved = redis.call('HMGET', c.prefix .. 'cold-moved', m)[1]
    if dropped then return nil end
    return at, moved
  end
  return at
end
-- The cold copy of m is gone: out of the index, or (a digest field) a drop request for the relay.
local function coldDrop(c, m)
  if c.digest then
    redis.call('HSET', c.prefix .. 'cold-drop', m, '1')
    redis.call('HDEL', c.prefix .. 'cold-moved', m)
  else
    redis.call('HDEL', c.ix, m)
  end
end
-- reads first: a key of the wrong type fails the script before anything is written (the payload hash is not read:
-- that would fetch the message; a payload hash of the wrong type fails the last HDEL)
local inFlight = redis.call('ZSCORE', KEYS[3], member)
local dead = redis.call('ZSCORE', KEYS[5], member)
redis.call('HMGET', KEYS[4], member)
if ms == nil or ms ~= math.floor(ms) then
  return redis.error_reply('ERR delay-relay schedule.lua: ARGV[3] must be integer milliseconds, was ' .. tostring(ARGV[3]))
end
local due
if mode == 'after' then
  local t = redis.call('TIME')
  due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ms
elseif mode == 'at' then
  due = ms
else
  return redis.error_reply("ERR delay-relay schedule.lua: ARGV[2] must be 'at' or 'after', was " .. tostring(mode))
end
-- v2 options: checked before anything is written
local payload = ARGV[6]
if #ARGV > 6 then
  if not payload then
    return redis.error_reply('ERR delay-relay schedule.lua: per-message options (ARGV[7..]) need a message in ARGV[6]'
        .. ' (schedule by id)')
  end
  local expiry = ARGV[7]
  if expiry ~= '' then
    local plus, digits = string.match(expiry, '^(%+?)(%d+)$')
    if not digits or #digits > 15 then
      return redis.error_reply("ERR delay-relay schedule.lua: ARGV[7] (expiry) must be '', epoch milliseconds or"
          .. " '+<ms>' after the due time, was " .. expiry)
    end
    local at = tonumber(digits)
    if plus == '+' then at = due + at end
    if at < due then
      return redis.error_reply('ERR delay-relay schedule.lua: ARGV[7] (expiry) ' .. expiry .. ' is before the due time '
          .. string.format('%d', due))
    end
    expiry = string.format('%d', at)
  end
  if (#ARGV - 7) % 2 ~= 0 then
    return redis.error_reply('ERR delay-relay schedule.lua: headers (ARGV[8..]) must be name, value pairs; the last'
        .. ' name has no value: ' .. ARGV[#ARGV])
  end
  local seen, parts = {}, {}
  for i = 8, #ARGV, 2 do
    local name, value = ARGV[i], ARGV[i + 1]
    if name == '' then
      return redis.error_reply('ERR delay-relay schedule.lua: header name ARGV[' .. i .. '] is empty')
    end
    if string.lower(string.sub(name, 1, 8)) == 'x-delay-' then
      return redis.error_reply('ERR delay-relay schedule.lua: header ' .. name .. ' is refused: the relay sets'
          .. ' x-delay-* headers itself')
    end
    if seen[name] then
      return redis.error_reply('ERR delay-relay schedule.lua: header ' .. name .. ' is given twice')
    end
    seen[name] = true
    parts[#parts + 1] = #name .. ':' .. name .. #value .. ':' .. value
  end
  if expiry ~= '' or #parts > 0 or string.sub(payload, 1, 5) == '\255DR2:' then
    payload = '\255DR2:' .. expiry .. ':' .. #parts .. ':' .. table.concat(parts) .. payload
  end
elseif payload and string.sub(payload, 1, 5) == '\255DR2:' then
  payload = '\255DR2::0:' .. payload
end
-- Reads first: a key of the wrong type (written by another program) fails the script before anything is written
-- (Lua writes are not rolled back). Scheduled by id, the first write is the payload's HSET (which checks the payload
-- hash), so the shard and the attempts hash are read before it. Scheduled by message, the first write is the
-- attempts mark's HDEL and the second the ZADD, each checking its own key: a failing ZADD leaves only a mark removed
-- that no scheduled or in-flight member had (the member is not in flight, and the shard is no zset), so those two
-- reads are skipped. (Only commands a producer's ACL already allows: README "Redis: password, ACL user, TLS".)
local inFlight = redis.call('ZSCORE', KEYS[3], member)
if payload then
  redis.call('ZSCORE', KEYS[1], member)
  redis.call('HMGET', KEYS[4], member)
end
local cold = coldOf(member)
-- Redis Cluster, the slot in migration: an index part not on this node fails the script at its first access and keeps
-- what it wrote before; read it first, so such a call fails before any write (the caller retries).
local coldAt = cold and coldBlockOf(cold, member)
local dueText = string.format('%d', due)
if payload then
  redis.call('HSET', KEYS[2], member, payload)
end
if not inFlight then
  redis.call('HDEL', KEYS[4], member)
end
redis.call('ZADD', KEYS[1], dueText, member)
if coldAt then
  coldDrop(cold, member)
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == member then
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. ':' .. dueText)
end
return due
